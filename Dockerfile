# famulus in a container: the wheel is built in a throw-away stage, the runtime
# stage is python:3.11-slim with a non-root user and its data in the /data volume.
#   docker build -t famulus .
#   docker run -d -p 127.0.0.1:6877:6877 -v famulus-data:/data famulus
# (or: docker compose up -d, see compose.yaml). The first start prints the API
# key and a sign-in link: docker logs <container>.

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src/ src/
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /dist .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# bubblewrap sandboxes skill scripts; Docker's default seccomp profile forbids the
# namespaces it needs, so scripts are refused there unless the container runs with
# --security-opt seccomp=unconfined (see README, "Operate").
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /dist/ /tmp/dist/
RUN pip install --no-cache-dir /tmp/dist/famulus-*.whl && rm -rf /tmp/dist
RUN useradd --system --uid 10001 --user-group --home-dir /data --shell /usr/sbin/nologin famulus \
 && mkdir -p /data \
 && chown famulus:famulus /data \
 && chmod 700 /data

# Listening on every address is right only inside the container: publish the
# port on the host's loopback (127.0.0.1:6877:6877) or behind a TLS proxy.
ENV FAMULUS_HOME=/data \
    FAMULUS_HOST=0.0.0.0 \
    FAMULUS_PORT=6877
VOLUME ["/data"]
EXPOSE 6877
USER 10001:10001
WORKDIR /data
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ.get('FAMULUS_PORT', '6877'), timeout=4)"]
CMD ["famulus", "serve"]
