package casstor.auth;

import com.datastax.driver.core.PlainTextAuthProvider;

/**
 * cassandra-stress 4.0's {@code -mode ... auth-provider=casstor.auth.StressAuthProvider}: the role
 * {@code CASSTOR_USERNAME} with the password of {@code CASSTOR_PASSWORD_FILE} (or {@code CASSTOR_PASSWORD}), read
 * from the environment, so {@code ps} never shows it ({@code password=} on the command line would, and the
 * tool prints it in its settings).
 */
public final class StressAuthProvider extends PlainTextAuthProvider {
    public StressAuthProvider() {
        super(System.getenv("CASSTOR_USERNAME"), PasswordFile.fromEnvironment());
    }
}
