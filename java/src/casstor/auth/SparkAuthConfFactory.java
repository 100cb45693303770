package casstor.auth;

import com.datastax.spark.connector.cql.AuthConf;
import com.datastax.spark.connector.cql.AuthConfFactory;
import com.datastax.spark.connector.cql.NoAuthConf$;
import org.apache.spark.SparkConf;

/**
 * {@code spark.cassandra.auth.conf.factory=casstor.auth.SparkAuthConfFactory}: password authentication from
 * {@code spark.casstor.auth.username} and {@code spark.casstor.auth.passwordFile} (a path, not a secret), so the
 * password is never in the SparkConf, Spark's logged configuration or event log. No user name: no authentication.
 */
public final class SparkAuthConfFactory implements AuthConfFactory {
    public static final String USERNAME = "spark.casstor.auth.username";
    public static final String PASSWORD_FILE = "spark.casstor.auth.passwordFile";

    @Override
    public AuthConf authConf(SparkConf conf) {
        if (!conf.contains(USERNAME)) {
            return NoAuthConf$.MODULE$;
        }
        return new PasswordFileAuthConf(conf.get(USERNAME), conf.get(PASSWORD_FILE));
    }
}
