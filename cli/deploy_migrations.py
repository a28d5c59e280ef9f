"""The production overlays' migrate Jobs: one per service with a database, bringing its schema to the release's
version as the database's migrator role (`python -m services.<service> migrate`), so the services run with
TESSERA_<SERVICE>_MIGRATIONS=await and a role without DDL (deploy/postgres/service-roles.sql).

Each Job mounts only its own Secret, `migrate-<service>`, holding one file: `tessera_<service>_migrator_url`.
A finished Job is deleted after JOB_KEPT_SECONDS, so the next `kubectl apply` of a new release creates it afresh
(a Job's pod template cannot be changed in place).
"""

from __future__ import annotations

from cli.deploy_objects import (
    IMAGE,
    IMAGE_TAG,
    NAMESPACE,
    POSTGRES_PORT,
    POSTGRESQL_POLICY_SUFFIX,
    SECRET_MOUNT,
    hardened_container_security,
    hardened_pod_security,
    labels,
    network_policy,
    selector,
    service_account,
    tcp,
)

MIGRATE = "migrate"  # the Jobs' ServiceAccount and name label
DATABASE_LABEL = "tessera.dev/database"  # on a Job and its pod: the service whose database it migrates
JOB_KEPT_SECONDS = 300  # long enough to read its log with kubectl; then gone, so a new release can run it again
ATTEMPTS = 6  # a database still starting, or failing over: retried with the Job's growing back-off (about 6 min)


def job_name(service: str) -> str:
    return f"{MIGRATE}-{service}"


def secret_name(service: str) -> str:
    return f"{MIGRATE}-{service}"


def migrations_setting(service: str) -> dict:
    """The env entry that makes `service` wait for its Job instead of migrating."""
    return {"name": f"TESSERA_{service.upper()}_MIGRATIONS", "value": "await"}


def _job(service: str) -> dict:
    container = {
        "name": MIGRATE,
        "image": f"{IMAGE}:{IMAGE_TAG}",
        "imagePullPolicy": "Always",
        "command": ["python", "-m", f"services.{service}", "migrate"],
        "env": [{"name": "TESSERA_SECRETS_DIR", "value": SECRET_MOUNT},
                {"name": "TESSERA_VAR_DIR", "value": "/tmp"},
                {"name": "TESSERA_LOG_LEVEL", "value": "INFO"}],
        "resources": {"requests": {"cpu": "100m", "memory": "192Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
        "securityContext": hardened_container_security(),
        "volumeMounts": [{"name": "migrator", "mountPath": SECRET_MOUNT, "readOnly": True},
                         {"name": "tmp", "mountPath": "/tmp"}],
    }
    pod_labels = {**labels(MIGRATE), DATABASE_LABEL: service}
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": job_name(service), "labels": pod_labels},
        "spec": {
            "backoffLimit": ATTEMPTS,
            "ttlSecondsAfterFinished": JOB_KEPT_SECONDS,
            "template": {
                "metadata": {"labels": pod_labels},
                "spec": {
                    "serviceAccountName": MIGRATE,
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "restartPolicy": "OnFailure",
                    "securityContext": hardened_pod_security(),
                    "containers": [container],
                    "volumes": [
                        {"name": "migrator", "secret": {"secretName": secret_name(service), "defaultMode": 0o400,
                                                        "optional": False}},
                        {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}},
                    ],
                },
            },
        },
    }


def objects(services: list[str]) -> list[dict]:
    """The ServiceAccount, a Job per service, and their one way out: PostgreSQL (DNS comes with every pod). In
    Tessera's namespace by name: a component's own objects do not get the base's namespace."""
    made = [service_account(MIGRATE), *(_job(service) for service in services),
            network_policy(MIGRATE + POSTGRESQL_POLICY_SUFFIX, selector(MIGRATE), None, [{"ports": tcp(POSTGRES_PORT)}],
                           "the migrate Jobs reach PostgreSQL (each its own service's database), nothing else")]
    for item in made:
        item["metadata"] = {"name": item["metadata"]["name"], "namespace": NAMESPACE,
                            **{k: v for k, v in item["metadata"].items() if k != "name"}}
    return made
