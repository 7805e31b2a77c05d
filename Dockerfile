# syntax=docker/dockerfile:1
# remem serve with the PostgreSQL backend: see docs/deploy.md (compose.yaml runs it with pgvector).

FROM python:3.12-slim AS build
WORKDIR /src
# only what the wheel is built from, so edits elsewhere keep the install layer cached
COPY pyproject.toml README.md LICENSE ./
COPY src ./src
RUN pip install --no-cache-dir --prefix=/install ".[server,postgres]"

FROM python:3.12-slim
COPY --from=build /install /usr/local
# an unprivileged user owns the only writable place (/data: a SQLite file if REMEM_DB points there)
RUN useradd --system --uid 10001 --home-dir /data --create-home remem
USER remem
WORKDIR /data
ENV REMEM_DB=/data/remem.db \
    REMEM_EMBEDDER=local \
    PYTHONUNBUFFERED=1
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
ENTRYPOINT ["remem"]
# API keys are required off loopback: `docker compose exec server remem keys create --tenant NAME`
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]
