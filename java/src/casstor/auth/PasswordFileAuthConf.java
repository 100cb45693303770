package casstor.auth;

import com.datastax.oss.driver.api.core.auth.AuthProvider;
import com.datastax.oss.driver.api.core.auth.ProgrammaticPlainTextAuthProvider;
import com.datastax.spark.connector.cql.AuthConf;
import java.util.Objects;
import scala.Option;

/**
 * The Spark Cassandra Connector's credentials as a role name and the path of its password file. The connector
 * serializes this object into every task; the password is read only when a connection is opened, on the driver
 * or an executor (the file must be at the same path there), so it is in no task, log line or toString.
 */
public final class PasswordFileAuthConf implements AuthConf {
    private static final long serialVersionUID = 1L;

    private final String username;
    private final String passwordFile;

    public PasswordFileAuthConf(String username, String passwordFile) {
        this.username = Objects.requireNonNull(username, "username");
        this.passwordFile = Objects.requireNonNull(passwordFile, "password file");
    }

    @Override
    public Option<AuthProvider> authProvider() {
        return Option.apply(new ProgrammaticPlainTextAuthProvider(username, PasswordFile.read(passwordFile)));
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof PasswordFileAuthConf
                && username.equals(((PasswordFileAuthConf) other).username)
                && passwordFile.equals(((PasswordFileAuthConf) other).passwordFile);
    }

    @Override
    public int hashCode() {
        return Objects.hash(username, passwordFile);
    }

    @Override
    public String toString() {
        return "PasswordFileAuthConf(" + username + ", " + passwordFile + ")";
    }
}
