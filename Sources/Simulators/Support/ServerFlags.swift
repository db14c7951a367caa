import Basics

/// The flags every simulator command reads alike: where it listens, and the server certificate it is given.
struct ServerFlags {
    var host = "127.0.0.1"
    var port = 0
    var certFile: String?
    var keyFile: String?

    /// `--host` and `--port`, in every command's help first.
    static let listenOptions: [OptionSpec] = [
        .value("host", "address", "Listen address (default 127.0.0.1)."),
        .value("port", "n", "Port, 0 = a free one (default 0; the ready line says which)."),
    ]
    /// `--cert` and `--key` (a command may list its own flags between these and the listen options).
    static let certificateOptions: [OptionSpec] = [
        .value("cert", "file", "Server certificate chain (PEM); goes with --key."),
        .value("key", "file", "Server private key (PEM); goes with --cert."),
    ]

    init() {}

    init(_ args: ParsedArguments) throws(UsageError) {
        if let host = args.value("host") { self.host = host }
        if let port = try args.integer("port", as: Int.self, in: 0...65535) { self.port = port }
        certFile = args.value("cert")
        keyFile = args.value("key")
        if (certFile == nil) != (keyFile == nil) { throw UsageError("--cert and --key go together") }
    }
}
