import Basics
import Testing

@Suite struct DecimalTests {
    @Test(arguments: [0, 1, -1, 9, 10, -10, 99, 100, 1_700_000_000_123, Int64.max, Int64.min, Int64.min + 1])
    func writesWhatStringWritesAndKnowsItsLength(value: Int64) {
        var out: [UInt8] = [7]
        appendDecimal(value, to: &out)
        #expect(out == [7] + Array(String(value).utf8))
        #expect(decimalLength(value) == String(value).utf8.count)
    }
}
