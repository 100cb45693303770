package casstor.auth;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;

/**
 * The password of a casstor password file: its first line, read when a connection is made, so the password
 * never travels in a configuration, a serialized task or a command line. Python's
 * {@code casstor_ops.cluster.secret_files} writes these files (0600) and checks them before a job starts.
 * A missing or empty file fails the connection attempt with an exception naming the file, never its content.
 */
final class PasswordFile {
    private PasswordFile() {
    }

    static String read(String path) {
        try (BufferedReader reader = Files.newBufferedReader(Paths.get(path), StandardCharsets.UTF_8)) {
            String first = reader.readLine();
            if (first == null || first.isEmpty()) {
                throw new IllegalStateException("password file " + path + " is empty");
            }
            return first;
        } catch (IOException err) {
            throw new UncheckedIOException("cannot read password file " + path, err);
        }
    }

    /** The password named by the environment: the file {@code CASSTOR_PASSWORD_FILE}, else {@code CASSTOR_PASSWORD}. */
    static String fromEnvironment() {
        String file = System.getenv("CASSTOR_PASSWORD_FILE");
        if (file != null && !file.isEmpty()) {
            return read(file);
        }
        String password = System.getenv("CASSTOR_PASSWORD");
        if (password == null) {
            throw new IllegalStateException("neither CASSTOR_PASSWORD_FILE nor CASSTOR_PASSWORD is set");
        }
        return password;
    }
}
