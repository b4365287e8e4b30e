"""Running a scan: the scan itself, the policy resolved for it, and the store of saved scans."""
