import PushCore

/// The providers' sections of a configuration, each kept by its key (`apns`): the configuration names no
/// provider, and each provider's module reads and writes its own section through a typed accessor
/// (`configuration.apns`). Read when senders are made, never per job.
public struct ProviderSections: Sendable {
    private var values: [String: any DeclaredSection] = [:]

    public init() {}

    /// The section of type `S`, or `initial` when the file gave none.
    public subscript<S: DeclaredSection>(_ type: S.Type, default initial: @autoclosure () -> S) -> S {
        get { values[S.section] as? S ?? initial() }
        set { values[S.section] = newValue }
    }
}
