import Foundation

/// JSON config decoding shared by the simulators: errors name the offending field.
enum ConfigDecoding {
    static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch let DecodingError.dataCorrupted(context) {
            throw SimulatorError.configuration("invalid JSON at \(context.codingPath.map(\.stringValue).joined(separator: ".")): \(context.debugDescription)")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            throw SimulatorError.configuration("bad value at \(context.codingPath.map(\.stringValue).joined(separator: ".")): \(context.debugDescription)")
        } catch let DecodingError.keyNotFound(key, context) {
            throw SimulatorError.configuration("missing \(key.stringValue) at \(context.codingPath.map(\.stringValue).joined(separator: "."))")
        } catch {
            throw SimulatorError.configuration("\(error)")
        }
    }

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
