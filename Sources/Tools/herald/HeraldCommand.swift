import Basics

extension Command {
    /// A `herald <name>` subcommand (help, parsing and exit codes come from Basics).
    init(name: String, abstract: String, discussion: String = "", options: [OptionSpec], environment: [EnvironmentSpec] = [],
         run: @escaping @Sendable (ParsedArguments) throws -> Int32) {
        self.init(CommandSpec(usageName: "herald \(name)", abstract: abstract, discussion: discussion, options: options,
                              environment: environment), run: run)
    }
}
