import PushCore

/// A provider's credential block of an app (`"fcm": {...}`), declared in the provider's module: its key in the
/// app's object and the platform an app holding it belongs to.
public protocol CredentialBlock: Sendable, Equatable {
    static var key: String { get }
    static var platform: Platform { get }
}

/// An app's credential blocks, each kept by its key (`token`, `fcm`): the app's settings name no provider, and
/// each provider's module reads its own through a typed accessor (`app.fcm`). Equal when they hold the same keys
/// with equal values.
public struct CredentialBlocks: Sendable, Equatable {
    private var values: [String: any CredentialBlock] = [:]

    public init() {}

    public subscript<Block: CredentialBlock>(_ type: Block.Type) -> Block? {
        get { values[Block.key] as? Block }
        set { values[Block.key] = newValue }
    }

    /// The platforms whose blocks the app holds, in `Platform.allCases` order (more than one is refused).
    public var platforms: [Platform] {
        Platform.allCases.filter { platform in values.values.contains { type(of: $0).platform == platform } }
    }

    /// The platform of the app's jobs: the later provider's for an app that names several (which the loader
    /// refuses), and the first platform's for an app that names none (a credential is optional where nothing is
    /// loaded, as in tests).
    public var platform: Platform { platforms.last ?? Platform.allCases[0] }

    public static func == (a: CredentialBlocks, b: CredentialBlocks) -> Bool {
        a.values.count == b.values.count && a.values.allSatisfy { key, value in b.values[key].map(value.isEqual(to:)) ?? false }
    }
}

extension CredentialBlock {
    /// `==` across the existential: equal when `other` is a block of the same type with the same value.
    func isEqual(to other: any CredentialBlock) -> Bool { (other as? Self) == self }
}
