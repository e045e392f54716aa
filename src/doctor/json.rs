//! The report as JSON ([`Report::to_json`]): what `vkcuda_doctor --json` prints
//! and `vkcuda_doctor_report_get_json` hands to C.

use serde_json::json;

use super::types::{device_type_name, Report, Status};
use crate::cuda;

impl Report {
    /// The report as JSON: `{"vkcuda_version", "ready", "summary": {"pass", "warn",
    /// "fail"}, "checks": [{"name", "status", "seen", "fix"}], "devices": [...]}`.
    /// `vkcuda_version` is this crate's version (the C library's report,
    /// `vkcuda_doctor_report_get_json`, says the C library's there).
    pub fn to_json(&self) -> String {
        let uuid = |u: &Option<[u8; 16]>| u.as_ref().map(cuda::format_uuid);
        let checks: Vec<_> = self
            .checks
            .iter()
            .map(|c| json!({"name": c.name, "status": c.status.name(), "seen": c.seen, "fix": c.fix}))
            .collect();
        let devices: Vec<_> = self
            .pairs
            .iter()
            .map(|p| {
                json!({
                    "vulkan_index": p.vulkan_index,
                    "vulkan_name": p.vulkan_index.map(|_| p.vulkan_name.clone()),
                    "vulkan_uuid": uuid(&p.vulkan_uuid),
                    "vulkan_type": p.vulkan_type.map(device_type_name),
                    "cuda_ordinal": p.cuda_ordinal,
                    "cuda_name": p.cuda_ordinal.map(|_| p.cuda_name.clone()),
                    "cuda_uuid": uuid(&p.cuda_uuid),
                    "ready": p.ready,
                })
            })
            .collect();
        let v = json!({
            "vkcuda_version": env!("CARGO_PKG_VERSION"),
            "ready": self.ready(),
            "summary": {
                "pass": self.count(Status::Pass),
                "warn": self.count(Status::Warn),
                "fail": self.count(Status::Fail),
            },
            "checks": checks,
            "devices": devices,
        });
        serde_json::to_string_pretty(&v).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_json() {
        let mut r = Report::default();
        r.pass("a", "fine");
        r.add("b", Status::Warn, "meh", "do x");
        assert!(r.ready());
        r.add("c", Status::Fail, "bad \"quoted\"", "do y");
        assert!(!r.ready());
        assert_eq!(r.check("a").unwrap().fix, "");
        let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(v["ready"], false);
        assert_eq!(v["summary"]["fail"], 1);
        assert_eq!(v["checks"][2]["seen"], "bad \"quoted\"");
        assert_eq!(v["checks"][1]["status"], "warn");
        // This crate's version (the C door writes the C library's there).
        assert_eq!(v["vkcuda_version"], env!("CARGO_PKG_VERSION"));
    }
}
