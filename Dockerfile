# Builds permwrap on Debian with libseccomp and ships the binary in a slim
# image. It pulls golang and debian images from Docker Hub, which the
# project's machines cannot reach, so it is not built there;
# docs/examples/Dockerfile.agent (an agent under permwrap) is, by
# scripts/container-test. Running permwrap in a container needs a seccomp
# profile that allows pidfd_getfd: podman's default does, Docker's only
# with CAP_SYS_PTRACE (docs/teams.md, "Containers and CI").
FROM golang:1.26-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends libseccomp-dev pkg-config \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=1 go build -trimpath -o /out/permwrap ./cmd/permwrap

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends libseccomp2 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/permwrap /usr/local/bin/permwrap
ENTRYPOINT ["/usr/local/bin/permwrap"]
CMD ["doctor"]
