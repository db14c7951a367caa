/// One declared option: `--name <value>` when `valueName` is set, else a `--name` flag.
public struct OptionSpec: Sendable {
    public let name: String
    public let valueName: String?
    public let help: String
    /// May be given more than once (all values kept, in order); otherwise a second one is a usage error.
    public var repeatable = false

    public static func flag(_ name: String, _ help: String) -> OptionSpec { OptionSpec(name: name, valueName: nil, help: help) }
    public static func value(_ name: String, _ valueName: String, _ help: String, repeatable: Bool = false) -> OptionSpec {
        OptionSpec(name: name, valueName: valueName, help: help, repeatable: repeatable)
    }
}

/// An environment variable a command reads, listed in its help.
public struct EnvironmentSpec: Sendable {
    public let name: String
    public let help: String
    public init(_ name: String, _ help: String) { self.name = name; self.help = help }
}

/// What one command accepts, and its generated `--help` (one format for every executable).
public struct CommandSpec: Sendable {
    /// How the user types it: "herald worker", "herald-bench fill".
    public let usageName: String
    public let abstract: String
    public var discussion: String
    /// Usage text of the positional arguments ("<file>..."); empty means none are accepted.
    public var positionals: String
    public var options: [OptionSpec]
    public var environment: [EnvironmentSpec]

    public init(usageName: String, abstract: String, discussion: String = "", positionals: String = "",
                options: [OptionSpec], environment: [EnvironmentSpec] = []) {
        self.usageName = usageName
        self.abstract = abstract
        self.discussion = discussion
        self.positionals = positionals
        self.options = options
        self.environment = environment
        var seen: Set<String> = ["help"]
        for option in options { precondition(seen.insert(option.name).inserted, "option --\(option.name) declared twice") }
    }

    /// The last word of `usageName`: what a command group dispatches on.
    public var name: String { usageName.split(separator: " ").last.map(String.init) ?? usageName }

    public var help: String {
        var text = "OVERVIEW: \(abstract)\n\nUSAGE: \(usageName) [options]"
        if !positionals.isEmpty { text += " \(positionals)" }
        text += "\n"
        if !discussion.isEmpty { text += "\n" + HelpLayout.wrap(discussion, indent: 0) + "\n" }
        text += "\nOPTIONS:\n"
        for option in options + [.flag("help", "Show this help.")] {
            var left = "--\(option.name)"
            if let valueName = option.valueName { left += " <\(valueName)>" }
            text += HelpLayout.row(left, option.help + (option.repeatable ? " Repeatable." : ""))
        }
        if !environment.isEmpty {
            text += "\nENVIRONMENT:\n"
            for variable in environment { text += HelpLayout.row(variable.name, variable.help) }
        }
        return text
    }
}

extension CommandSpec {
    /// The options as a markdown table (`| flag | meaning |`), the same words as `help`, for a command's docs page.
    public var optionTable: String {
        var rows = ["| flag | meaning |", "|---|---|"]
        for option in options {
            let flag = "--\(option.name)" + (option.valueName.map { " <\($0)>" } ?? "")
            let help = option.help + (option.repeatable ? " Repeatable." : "")
            rows.append("| `\(flag)` | \(help.split(separator: "|", omittingEmptySubsequences: false).joined(separator: "\\|")) |")
        }
        return rows.joined(separator: "\n")
    }
}

/// Two-column help rows and word wrapping, shared by command and group help.
enum HelpLayout {
    static let width = 110
    static let helpColumn = 34

    /// `  left` then `help` from column 34 (on the next line when `left` is too long), wrapped at `width` (110).
    static func row(_ left: String, _ help: String) -> String {
        let head = "  " + left
        let indent = String(repeating: " ", count: helpColumn)
        let body = wrap(help, indent: helpColumn)
        if head.count <= helpColumn - 2 {
            return head + String(repeating: " ", count: helpColumn - head.count) + body.dropFirst(helpColumn) + "\n"
        }
        return head + "\n" + indent + body.dropFirst(helpColumn) + "\n"
    }

    /// Each line of `text` longer than `width` word-wrapped, every output line indented by `indent` spaces.
    static func wrap(_ text: String, indent: Int) -> String {
        let pad = String(repeating: " ", count: indent)
        var lines: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            // Short lines stay as written (examples keep their alignment).
            if indent + paragraph.count <= width {
                lines.append(paragraph.isEmpty ? "" : pad + paragraph)
                continue
            }
            var line = pad
            for word in paragraph.split(separator: " ") {
                if line.count > indent && line.count + 1 + word.count > width {
                    lines.append(line)
                    line = pad
                }
                line += (line.count > indent ? " " : "") + word
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }
}
