"""Static checks of deploy/: the image (Dockerfile), Docker Compose and the Kubernetes base
agree with the code they deploy. No Docker, no cluster, no network: the files are parsed
and held against memq's own command table, settings, HTTP routes and Redis settings, and
the Kubernetes objects against the API's schemas (kubernetes-validate ships them)."""

from __future__ import annotations

import importlib
import os
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import click
import kubernetes_validate  # type: ignore[import-untyped]  # no py.typed
import pytest
import yaml  # type: ignore[import-untyped]  # types-PyYAML is not installed
from pydantic import AliasChoices
from starlette.routing import Match

from memq.cli import COMMANDS
from memq.shared.settings import Settings

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
DOCKERFILE = DEPLOY / "Dockerfile"
COMPOSE = DEPLOY / "compose.yaml"
KUBERNETES_VERSION = "1.31"

#: The processes a deployment runs, by memq subcommand.
ROLES = ("migrate", "api", "worker", "beat", "flower")

#: Kinds the Kubernetes schemas do not know (checked on their own below).
CUSTOM_RESOURCES = {("keda.sh/v1alpha1", "ScaledObject")}

#: Variables deploy/ sets that are not memq settings, and what reads each.
OTHER_VARIABLES = {
    "POSTGRES_USER": "the postgres image",
    "POSTGRES_DB": "the postgres image",
    "POSTGRES_PASSWORD": "the postgres image (and compose's DATABASE_URL)",
    "FLOWER_BASIC_AUTH": "Flower, which reads its options from FLOWER_* variables",
    "HF_HUB_OFFLINE": "huggingface_hub (under tokenizers, litellm): the model ships in a package",
    "TOKENIZERS_PARALLELISM": "tokenizers: no threads started before Celery forks",
    "PYTHONUNBUFFERED": "python",
    "PYTHONDONTWRITEBYTECODE": "python",
    "PATH": "the image's virtualenv first",
    "PIP_DISABLE_PIP_VERSION_CHECK": "pip, in the build stage",
    "PIP_ROOT_USER_ACTION": "pip, in the build stage",
}


# --- reading the files --------------------------------------------------------------------


def yaml_documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def manifest_files() -> list[Path]:
    return sorted(p for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")


@cache
def manifests() -> tuple[tuple[str, dict[str, Any]], ...]:
    """(file name, object) for every Kubernetes object of the base."""
    return tuple((path.name, doc) for path in manifest_files() for doc in yaml_documents(path))


@cache
def kustomization() -> dict[str, Any]:
    return yaml_documents(K8S / "kustomization.yaml")[0]


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines (kustomize's env files: no quoting, # comments)."""
    values = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        assert sep and re.fullmatch(r"[A-Z_][A-Z0-9_]*", key), f"{path.name}:{number}: not KEY=VALUE: {line!r}"
        assert key not in values, f"{path.name}:{number}: {key} set twice"
        values[key] = value
    return values


def generator_env_files(kind: str) -> list[Path]:
    return [K8S / name for gen in kustomization().get(kind, []) for name in gen.get("envs", [])]


@cache
def compose() -> dict[str, Any]:
    return yaml_documents(COMPOSE)[0]


def interpolate(value: str) -> str:
    """Compose's variable substitution, with every variable unset: ${X:-default} gives the
    default, ${X:?error} and ${X} a placeholder."""

    def one(m: re.Match[str]) -> str:
        return m.group(3) if m.group(2) in (":-", "-") else "placeholder"

    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}", one, value).replace("$$", "$")


def compose_variables() -> set[str]:
    """The host variables compose.yaml substitutes."""
    return set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)", COMPOSE.read_text()))


def compose_environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.partition("=")[::2] for item in env)
    return {key: interpolate("" if value is None else str(value)) for key, value in env.items()}


@dataclass(frozen=True)
class Instruction:
    stage: int  # 0 for the first FROM's stage
    keyword: str
    text: str


@cache
def dockerfile() -> tuple[Instruction, ...]:
    """The Dockerfile's instructions (continuation lines joined, comments dropped)."""
    out: list[Instruction] = []
    stage, pending = -1, ""
    for line in DOCKERFILE.read_text().splitlines():
        if line.lstrip().startswith("#") or (not line.strip() and not pending):
            continue
        pending += line.rstrip().removesuffix("\\") + " "
        if line.rstrip().endswith("\\"):
            continue
        keyword, _, text = pending.strip().partition(" ")
        keyword = keyword.upper()
        stage += keyword == "FROM"
        out.append(Instruction(stage, keyword, text.strip()))
        pending = ""
    return tuple(out)


def final_stage(keyword: str) -> list[str]:
    last = max(i.stage for i in dockerfile())
    return [i.text for i in dockerfile() if i.stage == last and i.keyword == keyword]


def dockerfile_args() -> dict[str, str]:
    """ARG defaults (declared anywhere: this file redeclares none with another value)."""
    args = {}
    for i in dockerfile():
        if i.keyword == "ARG" and "=" in i.text:
            key, _, value = i.text.partition("=")
            args[key.strip()] = value.strip().strip('"')
    return args


def env_pairs(text: str) -> dict[str, str]:
    words = shlex.split(text)
    if "=" not in words[0]:  # the old ENV KEY value form
        return {words[0]: " ".join(words[1:])}
    return dict(word.split("=", 1) for word in words)


def dockerfile_env(final_only: bool = True) -> dict[str, str]:
    texts = final_stage("ENV") if final_only else [i.text for i in dockerfile() if i.keyword == "ENV"]
    env: dict[str, str] = {}
    for text in texts:
        env.update(env_pairs(text))
    return env


def exec_form(text: str) -> list[str]:
    value = yaml.safe_load(text)  # a JSON array is YAML
    assert isinstance(value, list), f"not the exec form (a JSON array): {text}"
    return [str(v) for v in value]


def image_argv(args: list[str] | None = None) -> list[str]:
    """What a container of the image runs: ENTRYPOINT + (args or CMD)."""
    (entrypoint,) = final_stage("ENTRYPOINT")
    (cmd,) = final_stage("CMD")
    return exec_form(entrypoint) + (args if args is not None else exec_form(cmd))


# --- settings -------------------------------------------------------------------------------


@cache
def setting_names() -> frozenset[str]:
    """Every environment variable Settings reads (MEMQ_<FIELD>, and the aliases)."""
    prefix = Settings.model_config.get("env_prefix", "")
    names: set[str] = set()
    for field_name, field in Settings.model_fields.items():
        alias = field.validation_alias
        if isinstance(alias, AliasChoices):
            names.update(c for c in alias.choices if isinstance(c, str))
        elif isinstance(alias, str):
            names.add(alias)
        else:
            names.add(f"{prefix}{field_name}".upper())
    return frozenset(names)


def settings_from(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Settings as a process with exactly these variables reads them (nothing from this one)."""
    for key in list(os.environ):
        if key.upper() in setting_names():
            monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return Settings()


def k8s_environment() -> dict[str, str]:
    """A pod's memq variables: the image's, then the generated ConfigMap's and Secret's."""
    env = dockerfile_env()
    for path in generator_env_files("configMapGenerator") + generator_env_files("secretGenerator"):
        env.update(read_env_file(path))
    return env


# --- what runs where ------------------------------------------------------------------------


def pod_specs() -> Iterator[tuple[str, dict[str, Any]]]:
    for file, doc in manifests():
        if doc["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
            yield f"{file}:{doc['kind']}/{doc['metadata']['name']}", doc["spec"]["template"]["spec"]


def containers() -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    for where, spec in pod_specs():
        for container in spec.get("initContainers", []) + spec["containers"]:
            yield f"{where}:{container['name']}", spec, container


def image_names() -> set[str]:
    return {entry["name"] for entry in kustomization().get("images", [])}


def container_argv(container: dict[str, Any]) -> list[str]:
    if "command" in container:
        return list(container["command"]) + list(container.get("args", []))
    assert container["image"] in image_names(), f"{container['name']}: no command and not memq's image"
    return image_argv(container.get("args"))


def compose_memq_services() -> dict[str, dict[str, Any]]:
    """The services that run the image built from deploy/Dockerfile."""
    return {
        name: svc
        for name, svc in compose()["services"].items()
        if isinstance(svc.get("build"), dict)
        and (COMPOSE.parent / svc["build"]["context"] / svc["build"]["dockerfile"]).resolve() == DOCKERFILE
    }


def compose_argv(service: dict[str, Any]) -> list[str]:
    def words(value: str | list[str]) -> list[str]:
        return shlex.split(value) if isinstance(value, str) else [str(v) for v in value]

    command = words(service["command"]) if "command" in service else None
    if "entrypoint" in service:
        return words(service["entrypoint"]) + (command or [])
    return image_argv(command)


def memq_args(argv: list[str]) -> list[str]:
    """The arguments after `memq` when argv runs the memq command, else []."""
    return argv[1:] if argv and Path(argv[0]).name == "memq" else []


def command_lines() -> Iterator[tuple[str, list[str]]]:
    """(where, argv) for every command line deploy/ runs: containers, probes, healthchecks."""
    yield "Dockerfile: ENTRYPOINT + CMD", image_argv()
    for where, _, container in containers():
        yield f"{where}: command", container_argv(container)
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            if "exec" in container.get(probe, {}):
                yield f"{where}: {probe}", list(container[probe]["exec"]["command"])
    for name, svc in compose_memq_services().items():
        yield f"compose {name}: command", compose_argv(svc)
    for name, svc in compose()["services"].items():
        test = (svc.get("healthcheck") or {}).get("test")
        if isinstance(test, list) and test[:1] == ["CMD"]:
            yield f"compose {name}: healthcheck", [str(t) for t in test[1:]]
        elif isinstance(test, list) and test[:1] == ["CMD-SHELL"]:
            yield f"compose {name}: healthcheck", shlex.split(test[1])


def memq_commands() -> list[tuple[str, list[str]]]:
    """(where, the arguments after `memq`) for those that run the memq command."""
    return [(where, memq_args(argv)) for where, argv in command_lines() if memq_args(argv)]


def click_command(name: str) -> click.Command:
    module, attribute = COMMANDS[name]
    command = getattr(importlib.import_module(module), attribute)
    assert isinstance(command, click.Command)
    return command


def parse(args: list[str]) -> click.Context:
    """The subcommand's options parsed as `memq` would (raises on an unknown option)."""
    return click_command(args[0]).make_context(f"memq {args[0]}", list(args[1:]))


def role(args: list[str]) -> str:
    """The memq subcommand a process runs ('' for anything else)."""
    return args[0] if args else ""


def workers_k8s() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    return [(w, spec, c) for w, spec, c in containers() if role(memq_args(container_argv(c))) == "worker"]


# --- Kubernetes -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "doc",
    [doc for _, doc in manifests() if (doc["apiVersion"], doc["kind"]) not in CUSTOM_RESOURCES],
    ids=[
        f"{file}:{doc['kind']}/{doc['metadata']['name']}"
        for file, doc in manifests()
        if (doc["apiVersion"], doc["kind"]) not in CUSTOM_RESOURCES
    ],
)
def test_manifest_is_valid_for_kubernetes(doc: dict[str, Any]) -> None:
    # strict: unknown fields fail too (a misspelt or misplaced key is not silently dropped)
    kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_keda_scales_the_worker_deployment_on_memq_backlog() -> None:
    scaled = [doc for _, doc in manifests() if doc["kind"] == "ScaledObject"]
    assert len(scaled) == 1
    (obj,) = scaled
    assert obj["apiVersion"] == "keda.sh/v1alpha1"
    spec = obj["spec"]

    target = spec["scaleTargetRef"]
    assert target.get("kind", "Deployment") == "Deployment"
    deployments = {doc["metadata"]["name"]: doc for _, doc in manifests() if doc["kind"] == "Deployment"}
    assert target["name"] in deployments, f"no Deployment {target['name']}"
    worker = deployments[target["name"]]
    assert [role(memq_args(container_argv(c))) for c in worker["spec"]["template"]["spec"]["containers"]] == ["worker"]
    # the HPA KEDA makes owns the count: `kubectl apply` must not reset it
    assert "replicas" not in worker["spec"]

    assert spec["minReplicaCount"] >= 1
    assert spec["maxReplicaCount"] > spec["minReplicaCount"]
    # cooldownPeriod only governs the step to zero; above it, the HPA's scale-down window does
    window = spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"]
    assert window > 0

    (trigger,) = spec["triggers"]
    assert trigger["type"] == "prometheus"
    meta = trigger["metadata"]
    assert re.match(r"https?://[^/\s]+", meta["serverAddress"])
    assert float(meta["threshold"]) > 0
    query = meta["query"]
    assert re.search(r"\bmemq_backlog\b(?!_)", query), query
    # every API replica reports the whole backlog (measured from Redis): a sum would count
    # it once per replica
    api_replicas = deployments["memq-api"]["spec"].get("replicas", 1)
    if api_replicas > 1:
        assert re.match(r"\s*(max|min|avg)\b", query), f"{query}: {api_replicas} API replicas report the same figure"
    # the metric is one memq exports
    exported = ('"memq_backlog"' in p.read_text() for d in ("memq", "shared") for p in (ROOT / d).rglob("*.py"))
    assert any(exported), "no code exports memq_backlog"


def test_kustomization_lists_exactly_the_manifests_and_its_env_files_exist() -> None:
    resources = kustomization()["resources"]
    assert len(resources) == len(set(resources))
    assert sorted(resources) == [p.name for p in manifest_files()]
    generated: dict[str, set[str]] = {}
    for kind, ref in (("configMapGenerator", "configMapRef"), ("secretGenerator", "secretRef")):
        gens = kustomization().get(kind, [])
        assert gens, f"no {kind}"
        for gen in gens:
            for name in gen.get("envs", []) + gen.get("files", []):
                assert (K8S / name.split("=")[-1]).is_file(), f"{kind} {gen['name']}: {name} is missing"
        generated[ref] = {gen["name"] for gen in gens}
    # every pod reads the generated ConfigMap and Secret (kustomize renames them with a hash)
    for where, spec in pod_specs():
        for container in spec.get("initContainers", []) + spec["containers"]:
            refs = {ref: {src[ref]["name"] for src in container.get("envFrom", []) if ref in src} for ref in generated}
            for ref, names in generated.items():
                assert refs[ref] == names, f"{where}:{container['name']} envFrom {ref}: {refs[ref]} != {names}"
    # every image is one the `images` entry points somewhere real
    for where, _, container in containers():
        assert container["image"] in image_names(), f"{where}: image {container['image']} not in images"


def test_pods_run_as_the_image_user_not_root() -> None:
    uid = int(final_stage("USER")[-1].split(":")[0])
    for where, spec in pod_specs():
        ctx = spec.get("securityContext", {})
        assert ctx.get("runAsNonRoot") is True, where
        assert ctx.get("runAsUser") == uid, f"{where}: runAsUser {ctx.get('runAsUser')} is not the image's {uid}"
        for container in spec["containers"]:
            assert container["securityContext"]["allowPrivilegeEscalation"] is False, where


def test_pods_disable_service_links() -> None:
    # Kubernetes adds <SERVICE>_PORT=tcp://ip:port and more for every Service of the
    # namespace; for the Service memq-api that is MEMQ_API_PORT, a setting it would break.
    services = [doc["metadata"]["name"] for _, doc in manifests() if doc["kind"] == "Service"]
    link_names = {f"{s.upper().replace('-', '_')}_{suffix}" for s in services for suffix in ("PORT", "SERVICE_PORT")}
    clashes = sorted(link_names & setting_names())
    for where, spec in pod_specs():
        assert spec.get("enableServiceLinks") is False, f"{where}: service links would set {clashes}"


def test_writable_folders_are_mounted_under_a_read_only_root() -> None:
    data_dir = str(Settings.model_fields["data_dir"].default)
    data_dir = k8s_environment().get("MEMQ_DATA_DIR", data_dir)
    for where, _, container in containers():
        if container.get("securityContext", {}).get("readOnlyRootFilesystem"):
            mounts = {m["mountPath"] for m in container.get("volumeMounts", [])}
            assert {data_dir, "/tmp"} <= mounts, f"{where}: read-only root, nothing writable at {data_dir} or /tmp"


def test_k8s_worker_grace_period_exceeds_the_task_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    limit = settings_from(k8s_environment(), monkeypatch).task_time_limit_seconds
    workers = workers_k8s()
    assert workers
    for where, spec, _ in workers:
        # the default grace (30 s) would kill tasks Celery's warm shutdown is finishing
        assert spec.get("terminationGracePeriodSeconds", 30) > limit, where


def test_k8s_worker_liveness_needs_no_broker() -> None:
    for where, _, container in workers_k8s():
        live = container["livenessProbe"]["exec"]["command"]
        assert memq_args(live)[:1] == ["worker-alive"], where
        # readiness would need the broker; a worker waiting for it is not broken
        assert "readinessProbe" not in container, where
        assert "startupProbe" in container, f"{where}: liveness would fail while the model loads"


def test_beat_is_a_single_replica_replaced_with_recreate() -> None:
    beats = [
        doc
        for _, doc in manifests()
        if doc["kind"] == "Deployment"
        and any(role(memq_args(container_argv(c))) == "beat" for c in doc["spec"]["template"]["spec"]["containers"])
    ]
    assert len(beats) == 1
    assert beats[0]["spec"]["replicas"] == 1
    assert beats[0]["spec"]["strategy"]["type"] == "Recreate"


def test_migration_job_runs_memq_migrate_with_retries() -> None:
    jobs = [
        doc
        for _, doc in manifests()
        if doc["kind"] == "Job"
        and [role(memq_args(container_argv(c))) for c in doc["spec"]["template"]["spec"]["containers"]] == ["migrate"]
    ]
    assert len(jobs) == 1
    # retried while PostgreSQL is not reachable yet (an explicit choice, not the default)
    assert jobs[0]["spec"]["backoffLimit"] > 0
    assert jobs[0]["spec"]["template"]["spec"]["restartPolicy"] in ("Never", "OnFailure")


def test_every_role_runs_in_kubernetes() -> None:
    ran = {role(memq_args(container_argv(c))) for _, _, c in containers()}
    assert set(ROLES) <= ran


# --- Docker Compose -------------------------------------------------------------------------


def test_compose_runs_every_role_from_the_repository_image() -> None:
    services = compose_memq_services()
    for name, svc in services.items():
        context = (COMPOSE.parent / svc["build"]["context"]).resolve()
        assert context == ROOT, f"{name}: build context {context} is not the repository root"
    roles = {role(memq_args(compose_argv(svc))) for svc in services.values()}
    assert set(ROLES) <= roles
    assert {"redis", "postgres"} <= set(compose()["services"])


def test_compose_workers_scale() -> None:
    workers = [svc for svc in compose_memq_services().values() if role(memq_args(compose_argv(svc))) == "worker"]
    assert len(workers) == 1
    (worker,) = workers
    # `docker compose up --scale worker=N` needs N distinct names and no host port twice
    assert "container_name" not in worker
    for port in worker.get("ports", []):
        published = port.get("published") if isinstance(port, dict) else (str(port).rsplit(":", 1)[:-1] or None)
        assert not published, f"worker publishes a fixed host port: {port}"


def test_compose_start_order_waits_for_healthy_services_and_the_migration() -> None:
    services = compose_memq_services()
    by_role = {role(memq_args(compose_argv(svc))): (name, svc) for name, svc in services.items()}
    migrate_name, migrate = by_role["migrate"]
    assert migrate.get("restart") in ("no", False), "a one-shot migration must not restart"
    for dep in ("redis", "postgres"):
        assert migrate["depends_on"][dep]["condition"] == "service_healthy"
        assert compose()["services"][dep]["healthcheck"]["test"]
    for r in ("api", "worker"):
        depends = by_role[r][1]["depends_on"]
        assert depends[migrate_name]["condition"] == "service_completed_successfully", r


def test_compose_healthchecks_fit_each_role() -> None:
    # the image's HEALTHCHECK probes the API: every other role says what to check instead
    for name, svc in compose_memq_services().items():
        if role(memq_args(compose_argv(svc))) != "api":
            assert "healthcheck" in svc, f"{name} would inherit the API's healthcheck"
    for name, svc in compose_memq_services().items():
        if role(memq_args(compose_argv(svc))) == "worker":
            assert memq_args([str(t) for t in svc["healthcheck"]["test"][1:]])[:1] == ["worker-alive"], name


def test_compose_worker_stop_grace_exceeds_the_task_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, svc in compose_memq_services().items():
        if role(memq_args(compose_argv(svc))) != "worker":
            continue
        limit = settings_from({**dockerfile_env(), **compose_environment(svc)}, monkeypatch).task_time_limit_seconds
        grace = duration_seconds(str(svc.get("stop_grace_period", "10s")))
        assert grace > limit, f"{name}: stop_grace_period {grace} s <= task time limit {limit} s"


def duration_seconds(text: str) -> float:
    """Compose's durations: 330s, 5m30s, 1h, 1.5s."""
    units = {"h": 3600, "m": 60, "s": 1, "ms": 0.001, "us": 1e-6}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|h|m|s)", text)
    assert "".join(n + u for n, u in parts) == text, f"not a duration: {text}"
    return sum(float(n) * units[u] for n, u in parts)


def test_compose_redis_uses_deploy_redis_conf_and_postgres_has_pgvector() -> None:
    redis = compose()["services"]["redis"]
    mounts = {}
    for volume in redis["volumes"]:
        source, _, target = volume.partition(":")
        mounts[(COMPOSE.parent / source).resolve() if source.startswith(".") else source] = target.split(":")[0]
    target = mounts.get(DEPLOY / "redis.conf")
    assert target, "deploy/redis.conf is not mounted"
    assert target in redis["command"], "redis-server is not started with the mounted config"
    image = compose()["services"]["postgres"]["image"]
    m = re.fullmatch(r"pgvector/pgvector:pg(\d+)(?:-.*)?", image)
    assert m and int(m.group(1)) >= 15, image
    assert "${POSTGRES_PASSWORD:?" in COMPOSE.read_text(), "the database password must be required, never defaulted"


# --- commands, ports and probes ---------------------------------------------------------------


@pytest.mark.parametrize("where, args", memq_commands(), ids=[where for where, _ in memq_commands()])
def test_memq_command_exists_and_its_options_parse(where: str, args: list[str]) -> None:
    assert args and args[0] in COMMANDS, f"{where}: `memq {' '.join(args)}` is not a memq command"
    parse(args)  # click raises on an unknown option or a bad value


def listening_port(args: list[str], settings: Settings) -> int:
    port = parse(args).params["port"]
    if port is None and args[0] == "api":
        return settings.api_port
    return int(port)


@cache
def api_app() -> Any:
    from memq.api.app import create_app

    with pytest.MonkeyPatch.context() as mp:
        # configuring logging is process-wide (and once only): leave it to the other tests
        mp.setattr("memq.shared.logging.configure_logging", lambda *a, **k: None)
        # building the app starts nothing (the services start with its lifespan, not run here)
        return create_app(Settings(env="production", redis_url="redis://x/0", database_url="postgresql://x/x"))


def api_routes_get(path: str) -> bool:
    scope = {"type": "http", "method": "GET", "path": path, "root_path": "", "headers": [], "query_string": b""}
    return any(route.matches(scope)[0] == Match.FULL for route in api_app().router.routes)


def flower_routes_get(path: str) -> bool:
    from flower.urls import handlers  # type: ignore[import-untyped]  # no py.typed
    from flower.views.error import NotFoundErrorHandler  # type: ignore[import-untyped]  # no py.typed

    # tornado takes the first pattern that matches; the last one answers everything with 404
    for handler in handlers:
        pattern, target = (handler[0], handler[1]) if isinstance(handler, tuple) else (handler.regex, handler.target)
        if re.fullmatch(pattern, path):
            return target is not NotFoundErrorHandler
    return False


def test_api_routes_check_is_not_vacuous() -> None:
    assert api_routes_get("/healthz")
    assert not api_routes_get("/no-such-route")
    assert flower_routes_get("/healthcheck")
    assert not flower_routes_get("/no-such-route")


def port_of(container: dict[str, Any], port: int | str) -> int:
    if isinstance(port, int):
        return port
    named = {p["name"]: p["containerPort"] for p in container.get("ports", []) if "name" in p}
    assert port in named, f"{container['name']}: no port named {port}"
    return int(named[port])


def test_k8s_ports_and_probes_point_where_api_and_flower_listen(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = settings_from(k8s_environment(), monkeypatch)
    checked = set()
    for _, doc in manifests():
        if doc["kind"] not in ("Deployment", "StatefulSet"):
            continue
        template = doc["spec"]["template"]
        for container in template["spec"]["containers"]:
            args = memq_args(container_argv(container))
            if role(args) not in ("api", "flower"):
                continue
            where = f"{doc['metadata']['name']}:{container['name']}"
            port = listening_port(args, settings)
            routes = api_routes_get if role(args) == "api" else flower_routes_get
            assert port in [p["containerPort"] for p in container.get("ports", [])], where
            for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                if "httpGet" in container.get(probe, {}):
                    get = container[probe]["httpGet"]
                    assert port_of(container, get["port"]) == port, f"{where} {probe}"
                    assert routes(get["path"]), f"{where} {probe}: no route GET {get['path']}"
            annotations = template["metadata"].get("annotations", {})
            if annotations.get("prometheus.io/scrape") == "true":
                assert int(annotations["prometheus.io/port"]) == port, where
                assert routes(annotations.get("prometheus.io/path", "/metrics")), f"{where}: nothing to scrape"
            # the Services that select these pods send to this port
            labels = template["metadata"]["labels"]
            for _, svc in manifests():
                if svc["kind"] == "Service" and svc["spec"]["selector"].items() <= labels.items():
                    for p in svc["spec"]["ports"]:
                        assert port_of(container, p.get("targetPort", p["port"])) == port, svc["metadata"]["name"]
                        checked.add(svc["metadata"]["name"])
            checked.add(role(args))
    assert {"api", "flower", "memq-api", "memq-flower"} <= checked


def healthcheck_url(test: list[str] | str) -> tuple[int, str]:
    text = test if isinstance(test, str) else " ".join(test)
    m = re.search(r"http://(?:127\.0\.0\.1|localhost):(\d+)(/[^'\"\s]*)", text)
    assert m, f"no local URL in {text}"
    return int(m.group(1)), m.group(2)


def test_compose_ports_and_healthchecks_point_where_api_and_flower_listen(monkeypatch: pytest.MonkeyPatch) -> None:
    checked = set()
    for name, svc in compose_memq_services().items():
        args = memq_args(compose_argv(svc))
        if role(args) not in ("api", "flower"):
            continue
        settings = settings_from({**dockerfile_env(), **compose_environment(svc)}, monkeypatch)
        port = listening_port(args, settings)
        for entry in svc.get("ports", []):
            target = entry["target"] if isinstance(entry, dict) else str(entry).rsplit(":", 1)[-1].split("/")[0]
            assert int(target) == port, f"{name}: publishes {entry}, listens on {port}"
        probe_port, path = healthcheck_url(svc["healthcheck"]["test"])
        assert probe_port == port, name
        assert (api_routes_get if role(args) == "api" else flower_routes_get)(path), f"{name}: no route GET {path}"
        checked.add(role(args))
    assert checked == {"api", "flower"}


def test_image_healthcheck_and_ports_fit_its_default_command() -> None:
    args = memq_args(image_argv())
    assert role(args) == "api"
    (check,) = final_stage("HEALTHCHECK")
    m = re.search(r"http://(?:127\.0\.0\.1|localhost):%s(/\S*?)'.*get\('MEMQ_API_PORT', '(\d+)'\)", check)
    assert m, check
    assert api_routes_get(m.group(1))
    # the port it falls back to is where `memq api` listens with the image's environment
    default_port = int(dockerfile_env().get("MEMQ_API_PORT", Settings.model_fields["api_port"].default))
    assert int(m.group(2)) == default_port
    exposed = {int(p.split("/")[0]) for text in final_stage("EXPOSE") for p in text.split()}
    flower_default = next(p.default for p in click_command("flower").params if p.name == "port")
    assert {default_port, flower_default} <= exposed


# --- settings and variables ---------------------------------------------------------------


def variables_set() -> Iterator[tuple[str, str]]:
    """(where, name) for every variable deploy/ sets in a process's environment."""
    for name in dockerfile_env(final_only=False):
        yield "Dockerfile ENV", name
    for path in generator_env_files("configMapGenerator") + generator_env_files("secretGenerator"):
        for name in read_env_file(path):
            yield f"k8s/{path.name}", name
    for where, _, container in containers():
        for entry in container.get("env", []):
            yield where, entry["name"]
    for name, svc in compose()["services"].items():
        for key in compose_environment(svc):
            yield f"compose {name}", key


def test_every_variable_deploy_sets_is_a_memq_setting_or_known() -> None:
    unknown = [
        f"{where}: {name}" for where, name in variables_set() if name not in setting_names() | OTHER_VARIABLES.keys()
    ]
    assert not unknown, "not a setting (memq/shared/settings/) nor in OTHER_VARIABLES: " + ", ".join(unknown)


def test_every_memq_variable_named_in_deploy_is_a_setting() -> None:
    # comments included: a setting renamed in the code leaves no stale advice here
    files = [p for p in DEPLOY.rglob("*") if p.is_file()]
    named = {
        (p.relative_to(ROOT).as_posix(), m)
        for p in files
        for m in re.findall(r"(?<![\w$])MEMQ_[A-Z0-9_]*[A-Z0-9]", p.read_text())
    }
    named |= {("deploy/compose.yaml ${...}", v) for v in compose_variables() if v.startswith("MEMQ_")}
    assert named, "no MEMQ_ variable found: the scan is broken"
    unknown = sorted(f"{where}: {name}" for where, name in named if name not in setting_names())
    assert not unknown, unknown


def test_k8s_settings_validate_and_are_production(monkeypatch: pytest.MonkeyPatch) -> None:
    env = k8s_environment()
    # the example Secret's values must parse too (an overlay replaces them with real ones)
    settings = settings_from(env, monkeypatch)
    assert settings.env == "production"
    assert settings.log_format == "json"
    assert settings.api_host == "0.0.0.0"
    assert settings.redis_url and settings.database_url
    # memq.env alone, with the URLs a real Secret would bring
    alone = {**read_env_file(K8S / "memq.env"), "REDIS_URL": "redis://r:6379/0", "DATABASE_URL": "postgresql://p/db"}
    assert settings_from(alone, monkeypatch).env == "production"


def test_compose_settings_validate_and_are_production(monkeypatch: pytest.MonkeyPatch) -> None:
    services = compose_memq_services()
    assert services
    for name, svc in services.items():
        settings = settings_from({**dockerfile_env(), **compose_environment(svc)}, monkeypatch)
        assert settings.env == "production", name
        assert settings.api_host == "0.0.0.0", name
        assert settings.redis_url == "redis://redis:6379/0", name
        assert settings.database_url and "@postgres:" in settings.database_url, name


def test_image_environment_is_production(monkeypatch: pytest.MonkeyPatch) -> None:
    env = dockerfile_env()
    assert env.get("MEMQ_ENV") == "production"
    assert env.get("HF_HUB_OFFLINE") == "1"
    settings = settings_from({**env, "REDIS_URL": "redis://r/0", "DATABASE_URL": "postgresql://p/db"}, monkeypatch)
    assert (settings.env, settings.api_host, settings.log_format) == ("production", "0.0.0.0", "json")


# --- Redis ----------------------------------------------------------------------------------


def redis_directives(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition(" ")
            out[key.lower()] = value.strip()
    return out


def test_production_redis_keeps_what_memq_relies_on() -> None:
    deployed = redis_directives(DEPLOY / "redis.conf")
    embedded = redis_directives(ROOT / "shared" / "embedded" / "redis.conf")
    for key, value in {"appendonly": "yes", "appendfsync": "everysec", "maxmemory-policy": "noeviction"}.items():
        assert deployed.get(key) == embedded.get(key) == value, key
    # it serves other containers: not bound to loopback alone
    assert set(deployed.get("bind", "127.0.0.1").split()) - {"127.0.0.1", "-::1", "::1"}


# --- the image ------------------------------------------------------------------------------


def test_dockerfile_is_multi_stage_non_root_with_memq_as_entrypoint() -> None:
    froms = [i.text for i in dockerfile() if i.keyword == "FROM"]
    assert len(froms) >= 2
    base = re.sub(r"\$\{?(\w+)\}?", lambda m: dockerfile_args()[m.group(1)], froms[-1].split()[0])
    assert base == "python:3.11-slim"
    user = final_stage("USER")
    assert user, "the final stage runs as root"
    assert user[-1].split(":")[0] not in ("root", "0")
    assert final_stage("HEALTHCHECK")
    assert exec_form(final_stage("ENTRYPOINT")[0]) == ["memq"]
    # the final stage copies the virtualenv the builder made, not the source tree
    assert any("--from=" in text for text in final_stage("COPY"))


def test_dockerfile_installs_cpu_torch_first_then_memq_without_dev() -> None:
    runs = [i.text for i in dockerfile() if i.keyword == "RUN"]
    args = dockerfile_args()
    expand = [re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), r) for r in runs]
    torch_at = next(
        n for n, r in enumerate(expand) if re.search(r"--index-url https://download\.pytorch\.org/whl/cpu\b.*torch", r)
    )
    memq_at = next(n for n, r in enumerate(expand) if re.search(r"memq-\*\.whl\)?\[", r))
    assert torch_at < memq_at, "torch must be installed from the CPU index before memq pulls the default one"
    pinned = re.search(r"torch==([\w.]+)", expand[torch_at])
    assert pinned
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'"torch=={pinned.group(1)}"' in pyproject, "the image's torch is not the version pyproject pins"
    extras = re.search(r"memq-\*\.whl\)?\[([^\]]+)\]", expand[memq_at])
    assert extras
    import tomllib

    declared = tomllib.loads(pyproject)["project"]["optional-dependencies"]
    for extra in extras.group(1).split(","):
        assert extra in declared and extra != "dev", extra


def test_dockerignore_keeps_what_the_build_needs() -> None:
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert not any(p.startswith("!") for p in patterns), "exceptions are not modelled by this check"

    def ignored(rel: str) -> bool:
        parts = rel.split("/")
        prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
        return any(glob_match(p.lstrip("/"), prefix) for p in patterns for prefix in prefixes)

    needed = ["pyproject.toml", "README.md", "LICENSE", "NOTICE", "memq/__init__.py", "memq/cli/__init__.py"]
    # the folders memq/ links to (memq/shared -> shared, memq/migrations -> migrations, ...)
    for folder, dirs, _ in os.walk(ROOT / "memq", followlinks=True):
        for d in dirs:
            if os.path.islink(os.path.join(folder, d)):
                target = Path(folder, d).resolve()
                needed.append(next(p for p in target.rglob("*.py")).relative_to(ROOT).as_posix())
    assert any(n.startswith("migrations/") for n in needed)
    for rel in needed:
        assert (ROOT / rel).exists(), rel
        assert not ignored(rel), f".dockerignore leaves out {rel}, which the build needs"
    for rel in (".venv", ".git", ".memq"):
        assert ignored(rel), f".dockerignore sends {rel} to the build"


def glob_match(pattern: str, path: str) -> bool:
    """.dockerignore's matching (Go's filepath.Match, and ** for any number of folders)."""
    regex = ""
    for part in re.split(r"(\*\*/?|\*|\?|\[[^\]]*\])", pattern):
        if part in ("**", "**/"):
            regex += "(?:.*/)?" if part == "**/" else ".*"
        elif part == "*":
            regex += "[^/]*"
        elif part == "?":
            regex += "[^/]"
        elif part.startswith("[") and part.endswith("]"):
            regex += part
        else:
            regex += re.escape(part)
    return re.fullmatch(regex, path) is not None
