import Foundation
import Glibc

/// An append-only file of JSON lines: the simulators' accepted logs. Owns the `FILE*`, closed in `deinit`.
/// Loop-confined.
final class JSONLinesLog {
    private let file: UnsafeMutablePointer<FILE>

    init(path: String) throws {
        guard let file = fopen(path, "a") else { throw SimulatorError.file("cannot open log file \(path)") }
        self.file = file
    }

    deinit { fclose(file) }

    /// One line, written through at once (a reader may tail the file while the simulator runs).
    func append(_ entry: some Encodable) {
        guard let line = try? JSONEncoder().encode(entry) else { return }
        line.withUnsafeBytes { _ = fwrite($0.baseAddress, 1, $0.count, file) }
        fputc(0x0a, file)
        fflush(file)
    }

    func flush() { fflush(file) }
}
