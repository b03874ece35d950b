//! Writes the kudo.dev CRD manifests generated from the Rust types.
//!
//! `crdgen DIR` writes one file per CRD into DIR; `crdgen` alone prints all
//! of them as one multi-document stream.

use std::process::ExitCode;

fn main() -> ExitCode {
    let dir = std::env::args().nth(1);
    match run(dir.as_deref()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("crdgen: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(dir: Option<&str>) -> Result<(), Box<dyn std::error::Error>> {
    for crd in kudo_api::crds::all() {
        let text = kudo_api::crds::to_yaml(&crd)?;
        match dir {
            Some(dir) => {
                let path = std::path::Path::new(dir).join(kudo_api::crds::file_name(&crd));
                std::fs::write(&path, text)?;
                eprintln!("wrote {}", path.display());
            }
            None => print!("---\n{text}"),
        }
    }
    Ok(())
}
