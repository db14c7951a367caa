import Foundation
import ProviderKit
import Worker

/// The loader's entries with Herald's providers (`heraldProviders`), for the tools and the tests: the worker takes
/// the list as an argument, the composition root passes it here once.
extension ConfigurationLoader {
    public static func load(path: String?, environment: [String: String] = ProcessInfo.processInfo.environment,
                            ignoring: Set<String> = []) throws(ConfigurationError) -> Configuration {
        try load(path: path, providers: heraldProviders, environment: environment, ignoring: ignoring)
    }

    public static func read(path: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> (Configuration, ConfigurationProblems) {
        read(path: path, providers: heraldProviders, environment: environment)
    }

    public static func load(root: [String: Any]?, label: String? = nil, environment: [String: String]) throws(ConfigurationError) -> Configuration {
        try load(root: root, label: label, providers: heraldProviders, environment: environment)
    }

    public static func loadRedisOnly(path: String, environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(ConfigurationError) -> Configuration.RedisSettings {
        try loadRedisOnly(path: path, providers: heraldProviders, environment: environment)
    }

    public static func loadSections(_ sections: [String], path: String, environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(ConfigurationError) -> Configuration {
        try loadSections(sections, path: path, providers: heraldProviders, environment: environment)
    }

    public static func redisFromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(ConfigurationError) -> Configuration.RedisSettings {
        try redisFromEnvironment(environment, providers: heraldProviders)
    }
}

/// The declarations with Herald's providers' sections: `worker --help`, the docs' tables and the tests that walk
/// every setting.
extension Configuration {
    public static var settings: [Setting<Configuration>] { settings(heraldProviders) }

    public static var environmentSettings: [Setting<Configuration>] { environmentSettings(heraldProviders) }

    public static var numericSettings: [(key: String, access: NumberAccess<Configuration>)] { numericSettings(heraldProviders) }

    public static func documentation(updating text: String) -> (text: String, missing: [String]) {
        documentation(updating: text, providers: heraldProviders)
    }
}
