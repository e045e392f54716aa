//! The Rust API's doctor (`vkcuda::doctor`) on its own, the way a Rust program uses
//! it: no C function is called. The object suites of the Rust API live in the root
//! crate's tests/ (`cargo test --test NAME`); this case stays here until the doctor
//! suite (capi/tests/doctor.rs) moves there too.

mod support;

use std::sync::Arc;

use vkcuda::context::CudaChoice;
use vkcuda::{doctor, pairing, Context};

/// A Vulkan-only standalone context (lavapipe on a machine without a GPU).
fn vulkan_only() -> Arc<Context> {
    Context::standalone(None, CudaChoice::None).expect("a Vulkan-only standalone context")
}

fn ctx_uuid(ctx: &Context) -> [u8; 16] {
    let h = ctx.vulkan_handles();
    // SAFETY: the context's own live instance and physical device.
    unsafe { pairing::report(h.get_instance_proc_addr, h.instance, h.physical_device) }
        .unwrap()
        .support
        .props
        .uuid
}

#[test]
fn the_doctor_reports_this_machine() {
    let root = support::empty_dir("rust-api-doctor");
    let mut opts = doctor::Options::default();
    opts.root = root.clone();
    let report = doctor::run(&opts);
    assert!(report.checks.len() >= 5, "{report:?}");
    for c in &report.checks {
        assert!(!c.name.is_empty());
        assert_eq!(
            c.fix.is_empty(),
            c.status == doctor::Status::Pass,
            "a check has a fix exactly when it did not pass: {c:?}"
        );
    }
    assert_eq!(
        report.count(doctor::Status::Pass)
            + report.count(doctor::Status::Warn)
            + report.count(doctor::Status::Fail),
        report.checks.len()
    );
    assert_eq!(
        report.ready(),
        report.count(doctor::Status::Fail) == 0,
        "ready means nothing failed"
    );
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["ready"], serde_json::json!(report.ready()));
    assert_eq!(
        json["checks"].as_array().unwrap().len(),
        report.checks.len()
    );
    // The lavapipe device this suite runs on is in the pairing table.
    let ctx = vulkan_only();
    let uuid = ctx_uuid(&ctx);
    let pair = report
        .pairs
        .iter()
        .find(|p| p.vulkan_uuid == Some(uuid))
        .expect("the context's device is in the pairing table");
    let name = pairing::enumerate()
        .unwrap()
        .into_iter()
        .flatten()
        .find(|r| r.support.props.uuid == uuid)
        .unwrap()
        .support
        .props
        .name;
    assert_eq!(pair.vulkan_name, name);
    let _ = std::fs::remove_dir_all(root);
}
