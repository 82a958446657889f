# syntax=docker/dockerfile:1
# `nectar serve` in a container (issue 51): built in one stage, run from a slim image as a
# non-root user; the model directory is mounted read-only at /models/model. Not built on the
# machine this repository is developed on (no container runtime there): what is tested is the
# command line below (python/tests/test_container.py runs it with the repository's binary).
#
#   docker build -t nectar .
#   docker run --rm -p 7878:7878 -p 9100:9100 \
#       -v ~/.cache/nectar/models/minilm:/models/model:ro nectar
#
# Arguments after the image name replace CMD (e.g. `--memory-limit-gib 7 --suite bumblebee`;
# keep `--model /models/model` and the two listen addresses).

# The toolchain this repository is built and tested with here (rustc 1.95; the workspace needs
# at least 1.85).
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p nectar-app --bin nectar \
    && install -D -m 0755 target/release/nectar /out/nectar

FROM debian:bookworm-slim
# The Kubernetes preStop hook (deploy/kubernetes/deployment.yaml) needs only /bin/sh (its
# `kill` builtin) and `sleep`, both in the base image.
RUN useradd --system --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin nectar
COPY --from=build /out/nectar /usr/local/bin/nectar
USER 10001:10001
# The protocol port and the admin endpoint (/healthz, /readyz, /metrics).
EXPOSE 7878 9100
VOLUME ["/models"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["nectar", "serve"]
CMD ["--model", "/models/model", "--listen", "0.0.0.0:7878", "--admin", "0.0.0.0:9100", "--log-format", "json", "--drain-timeout", "60"]
