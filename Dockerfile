# floodgate's container image: the release binary for the target platform,
# the CA certificates it needs to reach OAuth2 token endpoints and
# rediss:// stores, and a default configuration, on an empty base. Nothing
# runs at build time, so the image builds offline and for any platform
# without emulation. docs/container.md says how to use it.
#
# The build context holds (docs/container.md#building-the-image):
#   dist/floodgate_OS_ARCH       the static binary for each target platform
#                                (CGO_ENABLED=0, from scripts/release)
#   dist/ca-certificates.crt     a CA bundle, e.g. the build machine's
#                                /etc/ssl/certs/ca-certificates.crt
#   deploy/container/floodgate.yaml  the default configuration
#
#   podman build --platform linux/amd64 \
#     --build-arg VERSION=v0.1.0 --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ) -t floodgate:v0.1.0 .
FROM scratch

# Set by the builder from --platform (BuildKit, buildah, podman).
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=devel
ARG REVISION=unknown
ARG CREATED=unknown
# SPDX expression of floodgate's licence; NOASSERTION until the
# repository states one.
ARG LICENSES=NOASSERTION

LABEL org.opencontainers.image.title="floodgate" \
      org.opencontainers.image.description="Rate-limiting gateway for HTTP APIs" \
      org.opencontainers.image.source="https://github.com/floodgate/floodgate" \
      org.opencontainers.image.documentation="https://github.com/floodgate/floodgate/blob/main/docs/container.md" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="${LICENSES}"

COPY --chmod=0555 dist/floodgate_${TARGETOS}_${TARGETARCH} /floodgate
COPY --chmod=0444 dist/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --chmod=0444 deploy/container/floodgate.yaml /etc/floodgate/floodgate.yaml

# Any unprivileged numeric user: no /etc/passwd is needed, and
# runAsNonRoot can check a number.
USER 65532:65532

# The public and admin (metrics, /healthz, /readyz) listeners. The default
# configuration binds them to loopback until FLOODGATE_LISTEN and
# FLOODGATE_ADMIN_LISTEN say otherwise (docs/container.md).
EXPOSE 8080 9090

ENTRYPOINT ["/floodgate"]
CMD ["serve", "--config", "/etc/floodgate/floodgate.yaml"]
