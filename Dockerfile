# bourse in a container: the static binary alone in an empty image.
#
#   docker build -t bourse .
#   docker run -d -p 8080:8080 -v bourse-data:/data bourse
#
# The image holds /bourse and an empty /data owned by the user it runs as (65532, not root).
# Mount a volume on /data: the database, signing.key and operator.key live there. The server
# listens on 0.0.0.0:8080 inside the container; put a TLS proxy in front and set
# BOURSE_PUBLIC_URL=https://… for anything beyond a sandbox. If you change BOURSE_LISTEN's port,
# change BOURSE_HEALTH_URL (what the health check asks) with it. Every `serve` flag can be given as
# an environment variable (README, Configuration) or after the image name:
#   docker run … bourse serve --relaxed-limits
# Name lookups need only the /etc/hosts and /etc/resolv.conf that the runtime mounts.

# The build stage's image: any Debian-based image with Rust 1.88+, gcc, libc6-dev and binutils,
# whose cargo reaches crates.io (docker build --build-arg RUST_IMAGE=…). CI, where Docker Hub
# is out of reach, builds on a local stand-in (.ci/rust-image).
ARG RUST_IMAGE=rust:1.95-bookworm
FROM ${RUST_IMAGE} AS build
WORKDIR /src
COPY . .
# .cargo/config.toml makes the x86_64 Linux build static (glibc linked in).
# The build fails if the executable still asks for a dynamic loader.
RUN cargo build --release --locked \
    && ! readelf -l target/release/bourse | grep -q INTERP \
    && mkdir -p /out/data \
    && cp target/release/bourse /out/bourse

FROM scratch
COPY --from=build /out/bourse /bourse
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV BOURSE_DATA=/data \
    BOURSE_LISTEN=0.0.0.0:8080 \
    BOURSE_HEALTH_URL=http://127.0.0.1:8080
VOLUME /data
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s \
    CMD ["/bourse", "health"]
ENTRYPOINT ["/bourse"]
CMD ["serve"]
