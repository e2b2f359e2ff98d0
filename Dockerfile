# The image the Helm chart runs (charts/wasp): `wasp serve`, and `wasp certs rotate` for the
# certificate CronJob. Two stages on the same slim base: the first installs wasp and its
# runtime dependencies from wheels into /opt/wasp (no compiler is installed or needed), the
# second copies only that virtualenv. tests/chart/test_chart_image.py runs this file's RUN
# steps in a fresh virtualenv, and hadolint lints it.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY policies/ policies/
COPY webhook/ webhook/
# Dependencies only as wheels (--only-binary): a dependency that would need a compiler fails
# the build instead of silently pulling one in. wasp itself is pure Python; the extras
# "server" (wasp serve) and "cluster" (wasp reconcile, wasp certs rotate) add what it runs.
RUN python -m venv /opt/wasp \
    && /opt/wasp/bin/python -m pip install --quiet "pip>=25.1" \
    && /opt/wasp/bin/python -m pip install --quiet --only-binary=:all: --no-build-isolation "setuptools>=77" \
    && /opt/wasp/bin/python -m pip install --quiet --only-binary=:all: --no-build-isolation ".[server,cluster]" \
    && /opt/wasp/bin/python -m pip uninstall --quiet --yes pip setuptools \
    && /opt/wasp/bin/wasp --version

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="wasp" \
      org.opencontainers.image.description="Workload-Aware Scheduling Policy admission webhook for Kubernetes 1.37" \
      org.opencontainers.image.source="https://github.com/wasp-dev/wasp" \
      org.opencontainers.image.licenses="Apache-2.0"
# The base image's own pip is not needed at run time.
RUN python -m pip uninstall --quiet --yes pip setuptools wheel
COPY --from=build /opt/wasp /opt/wasp
# The root filesystem is read-only in the chart: no bytecode writes, unbuffered logs, and the
# server's only writable directory is /tmp (an emptyDir).
ENV PATH=/opt/wasp/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# A numeric non-root user (the chart's runAsUser), so runAsNonRoot can be verified.
USER 65532:65532
WORKDIR /tmp
EXPOSE 8443 8080
ENTRYPOINT ["wasp"]
CMD ["serve", "--help"]
