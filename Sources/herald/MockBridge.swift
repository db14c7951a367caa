/// Until the simulator lands.
func mockMain(_ arguments: [String]) -> Int32 {
    printError("herald mock-apns: not yet built")
    return ExitCode.unavailable
}
