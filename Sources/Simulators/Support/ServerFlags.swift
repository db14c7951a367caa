import Basics
import Settings

/// The flags every simulator command reads alike: where it listens, and the server certificate it is given.
struct ServerFlags {
    var host = "127.0.0.1"
    var port = 0
    var certFile: String?
    var keyFile: String?

    /// `--host` and `--port`, in every command's help first.
    static var listenSettings: [Setting<ServerFlags>] {
        [
            .option("host", \.host, "address", "Listen address (default 127.0.0.1; ::1 and 0.0.0.0 work)."),
            .option("port", \.port, "n", in: 0...65535, "Port, 0 = a free one (default 0; the ready line says which)."),
        ]
    }
    /// `--cert` and `--key` (a command may list its own flags between these and the listen options).
    static var certificateSettings: [Setting<ServerFlags>] {
        [
            .option("cert", \.certFile, "file", "Server certificate chain (PEM); goes with --key."),
            .option("key", \.keyFile, "file", "Server private key (PEM); goes with --cert."),
        ]
    }

    /// What the flags may not say together.
    func check() throws(UsageError) {
        if (certFile == nil) != (keyFile == nil) { throw UsageError("--cert and --key go together") }
    }
}

extension ServerFlags {
    /// `--host` and `--port` inside a command's options, found at `path`.
    static func listen<Root>(at path: WritableKeyPath<Root, ServerFlags>) -> [Setting<Root>] { listenSettings.map { $0.lifted(path, prefix: "") } }
    /// `--cert` and `--key` inside a command's options, found at `path`.
    static func certificate<Root>(at path: WritableKeyPath<Root, ServerFlags>) -> [Setting<Root>] { certificateSettings.map { $0.lifted(path, prefix: "") } }
}
