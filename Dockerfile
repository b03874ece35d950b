# The kudo-manager image that `kubectl kudo init` deploys (--image picks
# another name). Build: `make image`; load it into the cluster's registry
# or node (e.g. `kind load docker-image kudo-rs/kudo-manager:0.1.0`).
# The toolchain rust-toolchain.toml pins (rustup adds its rustfmt and clippy).
FROM rust:1.95.0-slim-bookworm AS build
WORKDIR /src
COPY . .
# Without the default `dev` feature: no in-process API server in the image.
RUN cargo build --release --locked -p kudo-manager --no-default-features --bin kudo-manager

# glibc and libgcc only (rustls, no OpenSSL); runs as the non-root user
# the Deployment asks for (65532), on a read-only root file system.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/kudo-manager /usr/local/bin/kudo-manager
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/kudo-manager"]
CMD ["run"]
