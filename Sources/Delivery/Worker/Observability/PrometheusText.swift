/// Writes the Prometheus text exposition format (version 0.0.4): a HELP and a TYPE line per family, then
/// its samples, label values escaped. One string built per scrape; nothing here runs per notification.
public struct PrometheusText {
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"
    public private(set) var text = ""

    public init() { text.reserveCapacity(16_384) }

    public enum Kind: String { case counter, gauge, histogram, summary }

    public mutating func family(_ name: String, _ kind: Kind, _ help: String) {
        text += "# HELP \(name) \(help.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n"))\n"
        text += "# TYPE \(name) \(kind.rawValue)\n"
    }

    public mutating func sample(_ name: String, _ labels: [(String, String)] = [], _ value: Double) {
        text += name
        if !labels.isEmpty {
            text += "{"
            for (index, (key, labelValue)) in labels.enumerated() {
                if index > 0 { text += "," }
                text += key + "=\"" + Self.escape(labelValue) + "\""
            }
            text += "}"
        }
        text += " " + Self.format(value) + "\n"
    }

    public mutating func sample(_ name: String, _ labels: [(String, String)] = [], _ value: UInt64) {
        sample(name, labels, Double(value))
    }

    public mutating func sample(_ name: String, _ labels: [(String, String)] = [], _ value: Int) {
        sample(name, labels, Double(value))
    }

    /// One family with one sample: the common case of a plain gauge or counter.
    public mutating func single(_ name: String, _ kind: Kind, _ help: String, _ value: Double) {
        family(name, kind, help)
        sample(name, [], value)
    }

    /// `_bucket{le=...}` (cumulative), `_sum` (seconds) and `_count` for one labelled histogram.
    public mutating func histogram(_ name: String, _ labels: [(String, String)], _ histogram: LatencyHistogram) {
        var cumulative: UInt64 = 0
        for (index, count) in histogram.buckets.enumerated() {
            cumulative &+= count
            let bound = index < LatencyHistogram.boundsSeconds.count ? Self.format(LatencyHistogram.boundsSeconds[index]) : "+Inf"
            sample(name + "_bucket", labels + [("le", bound)], cumulative)
        }
        sample(name + "_sum", labels, Double(histogram.sumNanos) / 1e9)
        sample(name + "_count", labels, histogram.count)
    }

    static func escape(_ value: String) -> String {
        guard value.contains(where: { $0 == "\\" || $0 == "\"" || $0 == "\n" }) else { return value }
        var out = ""
        for character in value {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(character)
            }
        }
        return out
    }

    /// Integers without a fraction (counters read naturally), others as Swift's shortest round-trip form.
    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}
