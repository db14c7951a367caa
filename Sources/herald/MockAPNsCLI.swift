/// `herald mock-apns`: the APNs simulator (see docs/mock-apns.md); it parses its own flags.
enum MockAPNsCLI {
    static let spec = CommandSpec(
        name: "mock-apns", abstract: "Run the APNs simulator (HTTP/2, TLS, token auth, scripted faults).",
        options: [], passThrough: { arguments in mockMain(arguments) })
}
