//! The `kudo-manager` binary.

fn main() {
    println!("kudo-manager: the controller is not implemented yet; see README.md");
}
