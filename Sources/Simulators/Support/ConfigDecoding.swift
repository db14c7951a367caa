import Foundation

/// What the simulators' fault files share beyond their declarations: the rules' common checks, and the file read.
enum ConfigDecoding {
    /// What every rule of both simulators must satisfy: a rate within 0...1, and the field its fate needs
    /// (failFirst a count, throttle a limit, delay a latency).
    static func checkRule(_ index: Int, fate: String, rate: Double?, count: Int?, limit: Int?, latency: MockLatency?) throws {
        if let rate, !(0...1).contains(rate) { throw SimulatorError.configuration("rules[\(index)].rate must be within 0...1") }
        switch fate {
        case "failFirst":
            guard let count, count >= 0 else { throw SimulatorError.configuration("rules[\(index)]: fate failFirst needs count >= 0") }
        case "throttle":
            guard let limit, limit >= 0 else { throw SimulatorError.configuration("rules[\(index)]: fate throttle needs limit >= 0") }
        case "delay":
            guard latency != nil else { throw SimulatorError.configuration("rules[\(index)]: fate delay needs latencyMs") }
        default: break
        }
    }

    static func read(_ file: String) throws -> Data {
        guard let data = FileManager.default.contents(atPath: file) else { throw SimulatorError.file("cannot read \(file)") }
        return data
    }
}
