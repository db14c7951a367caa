/// The settings tables of docs/configuration.md, made from the declarations (`Configuration.settings`) with the
/// providers' sections, so the docs cannot disagree with the loader (`ConfigurationDocsTests` compares them and can
/// rewrite them).
extension Configuration {
    /// The sections with a generated table (the apps, a list of objects, have a table of their own).
    public static func documentedSections(_ providers: [any PushProvider.Type]) -> [String] { sections(providers).filter { $0 != "apps" } }

    /// The markdown table of one section: key (within the section), default, allowed values, meaning and
    /// the environment variable that overrides it.
    public static func documentationTable(section: String, providers: [any PushProvider.Type]) -> String {
        let defaults = Configuration()
        var rows = ["| key | default | allowed | meaning |", "|---|---|---|---|"]
        for setting in settings(providers) where setting.key.hasPrefix(section + ".") {
            let key = setting.key.dropFirst(section.count + 1)
            let environment = setting.environment.map { " Environment: `\($0)`." } ?? ""
            rows.append("| `\(key)` | \(setting.defaultText(defaults)) | \(setting.allowed) | \(setting.help)\(environment) |")
        }
        return rows.joined(separator: "\n")
    }

    /// The environment variables and the settings they override.
    public static func environmentTable(_ providers: [any PushProvider.Type]) -> String {
        (["| variable | overrides |", "|---|---|", "| `HERALD_CONFIG` | the configuration file (`--config`) |"]
            + environmentSettings(providers).map { "| `\($0.environment!)` | `\($0.key)` |" }).joined(separator: "\n")
    }

    /// docs/configuration.md with every generated block (between `<!-- settings:NAME -->` and
    /// `<!-- /settings -->`) replaced by what the declarations say, and the names whose markers are missing.
    public static func documentation(updating text: String, providers: [any PushProvider.Type]) -> (text: String, missing: [String]) {
        var text = text
        var missing: [String] = []
        for name in documentedSections(providers) + ["environment"] {
            let open = "<!-- settings:\(name) -->\n"
            let close = "<!-- /settings -->"
            guard let start = text.range(of: open), let end = text.range(of: close, range: start.upperBound..<text.endIndex) else {
                missing.append(name)
                continue
            }
            text.replaceSubrange(start.upperBound..<end.lowerBound, with: (name == "environment" ? environmentTable(providers) : documentationTable(section: name, providers: providers)) + "\n")
        }
        return (text, missing)
    }
}
