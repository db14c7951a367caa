import MockAPNs

/// `herald mock-apns` hands its arguments to the simulator's own command-line parser.
func mockMain(_ arguments: [String]) -> Int32 {
    MockAPNsCommand.main(arguments: arguments)
}
