import DeviceRegistry

extension DeviceRegistry.Counts {
    /// The dashboard's registry families (docs/observability.md): read from Redis with the queue-wide ones, so they
    /// are served once for the whole deployment. Empty while no device was ever registered.
    public func write(to out: inout PrometheusText) {
        out.family("herald_devices", .gauge, "Registered devices by app, platform and state (active, stale, removed and not yet purged).")
        for list in devices {
            for (state, count) in [("active", list.active), ("stale", list.stale), ("removed", list.removed)] {
                out.sample("herald_devices", [("app", list.app), ("platform", list.platform), ("state", state)], count)
            }
        }
        out.family("herald_devices_removed_total", .counter,
                   "Devices removed from the registry by app, platform and reason: a provider's (Unregistered, UNREGISTERED, DeviceNotRegistered...), unseen (aged out) or unregistered (DELETE).")
        for removal in removals {
            out.sample("herald_devices_removed_total", [("app", removal.app), ("platform", removal.platform), ("reason", removal.reason)], removal.count)
        }
    }
}
