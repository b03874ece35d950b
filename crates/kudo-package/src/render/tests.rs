//! Render tests that need the template engine live in tests/render.rs.
