# Builds permwrap on Debian with libseccomp and ships the binary in a slim
# image. (No Docker engine runs on the project's development machines; this
# file is checked for syntax only there.)
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
