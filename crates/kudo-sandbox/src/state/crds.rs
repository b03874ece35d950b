//! Registering the kind a CRD write defines, and holding a new kind back
//! until its CRD is Established when the sandbox establishes CRDs later.

use std::sync::Arc;

use serde_json::Value;

use super::State;
use crate::status::ApiError;

impl State {
    /// Re-registers every stored CRD (after restoring a snapshot).
    pub fn register_stored_crds(&mut self) {
        let crds: Vec<Arc<Value>> = self
            .store
            .list("apiextensions.k8s.io", "customresourcedefinitions", None)
            .map(|s| s.value.clone())
            .collect();
        for crd in crds {
            match self.registry.register_crd(&crd) {
                // One stored before it was Established waits again.
                Ok(info)
                    if self.establish_crds_later && !crate::establish::is_established(&crd) =>
                {
                    self.registry
                        .set_establishing(&info.group, &info.plural, true);
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "stored CRD could not be registered"),
            }
        }
    }

    /// Registers the kind `crd` defines. With [`State::establish_crds_later`],
    /// a new CRD (or one still waiting) is stored without accepted names
    /// or conditions and its kind stays unserved until [`crate::establish`]
    /// marks it.
    pub(super) fn register_crd_write(
        &mut self,
        name: &str,
        is_new: bool,
        crd: &mut Value,
    ) -> Result<(), ApiError> {
        let info = self.registry.register_crd(crd).map_err(|e| {
            ApiError::invalid(
                "CustomResourceDefinition",
                "apiextensions.k8s.io",
                name,
                "spec",
                &e,
            )
        })?;
        let later = self.establish_crds_later
            && (is_new || self.registry.is_establishing(&info.group, &info.plural));
        if later {
            crate::establish::mark_new(crd);
        }
        self.registry
            .set_establishing(&info.group, &info.plural, later);
        Ok(())
    }
}
