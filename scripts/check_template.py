#!/usr/bin/env python3
"""Checks template.yaml for what `sam validate` and cfn-lint do not see: what a deployed stack would get wrong.

Runs AWS SAM's own translator offline (the `samtranslator` package in the venv) and inspects the
CloudFormation that would be deployed, so what SAM adds on its own (the execution roles it
creates, the managed policies it attaches for event sources) is checked too:

  least privilege   no IAM statement allows `Resource: "*"` (or a wildcard action) unless it is
                    on ALLOWED_WILDCARDS below, with the reason; no managed policy is attached
                    unless it is on ALLOWED_MANAGED_POLICIES (empty: SAM's managed policies for
                    Lambda, streams and SQS all grant `Resource: "*"`);
  secret values     no secret value is in the template's reach: no AWS::SecretsManager::Secret
                    with GenerateSecretString or SecretString (editing it would regenerate the
                    real secrets and take every source down);
  routes            every method of /webhooks/{source} reaches the ingest function, so a GET
                    gets its documented 405, not the gateway's 404;
  wallet API        every route under /wallets has API Gateway's IAM authorizer (SigV4: never
                    reachable without it in AWS), and the wallet API's four routes are there,
                    each reaching the wallet API function;
  leading keys      a role named in LEADING_KEYS writes the table (PutItem, UpdateItem, …) only
                    with a `dynamodb:LeadingKeys` condition listing exactly its prefixes; every
                    role that reads the table or its index (GetItem, Query, BatchGetItem) is in
                    LEADING_READS and reads with a condition listing exactly the prefixes its
                    code reads, with exactly the read actions of READ_ACTIONS; a Scan only by a
                    role of ALLOWED_SCANS (with the reason), in a statement of its own;
  schedules         every scheduled function has an EventInvokeConfig; one scheduled every
                    minute (a sweep) is never retried (MaximumRetryAttempts 0, events at most
                    a minute old): a retry would overlap the next run;
  bodies            the S3 permissions on BodyBucket are exactly what each function does with
                    a body (BODY_ACTIONS below), and every function given any has BODY_BUCKET:
                    each function that can fail a message may remove its body's expiry tag
                    (s3:DeleteObjectTagging), or a failed message's body would expire;
  alarms            every function has an Errors and a Throttles alarm, and an IteratorAge alarm
                    when a stream invokes it; the front door has its
                    alarms (the ingest function's ServerErrors and Unauthorized, the gateway's
                    5xx); the quarantine alarm watches new arrivals (NumberOfMessagesSent); the
                    payments nobody matched to a tenant have theirs (UnmatchedPayments), and so
                    do internal wallet events refused as forged (ForgedInternalEvent), and
                    Stripe events the scheduled catch-up stored (CaughtUp); every
                    alarm on the stack's own metrics (WebhookIngestor/*) filters on the Stage
                    dimension, so stacks of two stages in one account never trip each other's;
  parallelism       the deliver function's stream mappings set a ParallelizationFactor of at
                    least 2, so a batch waiting on one slow destination does not hold up the
                    shard's other deliveries.

Usage:
  check_template.py [--template template.yaml]            run the checks (exit 1 on a problem)
  check_template.py [--template …] --ingest-timeout       print the ingest function's timeout, s
  check_template.py [--template …] --leading-keys ROLE    print the role's write prefixes, one a line
  check_template.py [--template …] --leading-reads ROLE   print the role's read prefixes (index: ones for the index)

Needs the venv (`make venv`): samtranslator and aws-sam-cli's YAML loader.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
from pathlib import Path
from typing import Any, Iterator

DEFAULT_TEMPLATE = Path(__file__).resolve().parent.parent / "template.yaml"

# (logical id of the role or policy as deployed, statement Sid) -> why "*" is unavoidable there.
# Keep it short: every entry is a permission on everything of its kind.
ALLOWED_WILDCARDS: dict[tuple[str, str], str] = {
    # X-Ray has no resource-level permissions: PutTraceSegments/PutTelemetryRecords only accept
    # "*" (Tracing: Active on every function).
    ("IngestRole", "XRayTraces"): "X-Ray supports no resource-level permissions",
    ("ProcessRole", "XRayTraces"): "X-Ray supports no resource-level permissions",
    ("ReaperRole", "XRayTraces"): "X-Ray supports no resource-level permissions",
    ("DeliverRole", "XRayTraces"): "X-Ray supports no resource-level permissions",
    ("ReconcileRole", "XRayTraces"): "X-Ray supports no resource-level permissions",
    ("ChargeRole", "XRayTraces"): "X-Ray supports no resource-level permissions",
    ("CatchUpRole", "XRayTraces"): "X-Ray supports no resource-level permissions",
    ("WalletApiRole", "XRayTraces"): "X-Ray supports no resource-level permissions",
    # CloudWatch metrics come from EMF log lines, not PutMetricData: nothing else needs "*".
}

# Managed policy ARNs (their last path segment) allowed on a role, with the reason. None: SAM's
# AWSLambdaBasicExecutionRole, AWSXrayWriteOnlyAccess, AWSLambdaDynamoDBExecutionRole and
# AWSLambdaSQSQueueExecutionRole all grant their actions on "*".
ALLOWED_MANAGED_POLICIES: dict[str, str] = {}

# Roles whose table writes are limited to their own partition-key prefixes (dynamodb:LeadingKeys),
# with the prefixes. DeliverRole's are inbox_core::outbox::schema::DELIVER_WRITES, ChargeRole's
# wallet_ledger::autopay::pass::charge_writes() and the Stripe account's token bucket,
# stripe_charges::client::BUCKET_PK (tests/it/template.rs compares them).
LEADING_KEYS: dict[str, list[str]] = {
    "DeliverRole": ["OUT#*", "FAN#*", "DEST#*", "DESTINATIONS"],
    "ChargeRole": ["WALLET#*", "MSG#wallet#*", "PROVIDER#stripe"],
    # The wallet API: holds, releases and idempotency records under the wallets' partitions,
    # the wallet's events, the Stripe account's token bucket (checkout sessions).
    "WalletApiRole": ["WALLET#*", "MSG#wallet#*", "PROVIDER#stripe"],
    # The scheduled Stripe catch-up: the Stripe source's messages, the account's token bucket
    # and its checkpoint (stripe_charges::catch_up::scheduled::table_writes("stripe")).
    "CatchUpRole": ["MSG#stripe#*", "PROVIDER#stripe"],
}
# Roles whose table READS are limited too (dynamodb:LeadingKeys on every GetItem, Query and
# BatchGetItem statement, the table's and the index's), with the prefixes each role's code reads.
# Every role that reads the table or its index is here: one that reads without an entry is a
# problem, and so is one whose code reads something its role is not granted (AccessDenied in AWS,
# which DynamoDB Local never raises). tests/it/template.rs compares each list with the code's:
#   ProcessRole    process_function::table_reads(): the processor's (inbox_core::process::
#                  PROCESS_READS: the message, the destinations) and the wallet handler's
#                  (wallet_ledger::ledger::handler_reads(): wallets, payment and method indexes)
#   ReaperRole     inbox_core::reaper::REAPER_READS, REAPER_INDEX_READS (the open shards)
#   ReconcileRole  wallet_ledger::ledger::reconcile_reads(), reconcile_index_reads()
#   DeliverRole    inbox_core::outbox::schema::DELIVER_READS, deliver_index_reads() (the outbox's
#                  open shards OUTBOX#0..63, never its done shards OUTBOX#DONE#…)
#   ChargeRole     wallet_ledger::autopay::pass's wallets, the due index's autopay shards, and the
#                  Stripe account's token bucket (stripe_charges::client::BUCKET_PK)
#   WalletApiRole  wallet_api::table_reads() (the wallets' partitions) and the token bucket
#   CatchUpRole    stripe_charges::catch_up::scheduled::table_reads() (its checkpoint, beside
#                  the token bucket) and wallet_ledger::ledger::reads::stripe_reconcile_reads()
#                  (the ledger reconciled against Stripe: the registry, wallets, payment index);
#                  it never reads a message (its puts are conditional)
# The token bucket is only written (conditional UpdateItems returning the item); its read grant
# is kept as the charge role had it.
# The ingest role and WalletApiCallerRole read nothing of the table (no entry: any read fails).
# A Scan is allowed only to a role in ALLOWED_SCANS, in a statement of its own.
LEADING_READS: dict[str, dict[str, list[str]]] = {
    "ProcessRole": {
        "table": ["MSG#*", "DESTINATIONS", "WALLET#*", "PAYMENT#*", "PAYMENT_METHOD#*"],
        "index": [],
    },
    "ReaperRole": {"table": ["MSG#*"], "index": ["OPEN#*"]},
    "ReconcileRole": {
        "table": ["WALLET#*", "WALLETS", "PAYMENT#*", "MSG#*"],
        "index": ["UNMATCHED", "AUTOPAY#ATTEMPT#*"],
    },
    "DeliverRole": {
        "table": ["MSG#*", "OUT#*", "FAN#*", "DEST#*", "DESTINATIONS"],
        "index": ["OUTBOX#?", "OUTBOX#??", "PARKED#*"],
    },
    "ChargeRole": {
        "table": ["WALLET#*", "PROVIDER#stripe"],
        "index": ["AUTOPAY#ATTEMPT#*", "AUTOPAY#RECURRING#*", "WALLET#HOLDS#*"],
    },
    "WalletApiRole": {"table": ["WALLET#*", "PROVIDER#stripe"], "index": []},
    "CatchUpRole": {"table": ["PROVIDER#stripe", "WALLET#*", "WALLETS", "PAYMENT#*"], "index": []},
}
# The read actions each role's code uses, on the table and on the index (a Scan is not among
# them: ALLOWED_SCANS). Granted exactly: one missing is AccessDenied in AWS (the deliver
# function's bodies read ahead are a BatchGetItem), one more is a read nobody does.
READ_ACTIONS: dict[str, dict[str, set[str]]] = {
    "ProcessRole": {"table": {"dynamodb:GetItem", "dynamodb:Query"}, "index": set()},
    "ReaperRole": {"table": {"dynamodb:GetItem"}, "index": {"dynamodb:Query"}},
    "ReconcileRole": {"table": {"dynamodb:GetItem", "dynamodb:Query"}, "index": {"dynamodb:Query"}},
    "DeliverRole": {
        "table": {"dynamodb:GetItem", "dynamodb:Query", "dynamodb:BatchGetItem"},
        "index": {"dynamodb:Query"},
    },
    "ChargeRole": {"table": {"dynamodb:GetItem", "dynamodb:Query"}, "index": {"dynamodb:Query"}},
    "WalletApiRole": {"table": {"dynamodb:GetItem", "dynamodb:Query"}, "index": set()},
    "CatchUpRole": {"table": {"dynamodb:GetItem", "dynamodb:Query"}, "index": set()},
}
# Roles that may Scan the table, with the reason. A Scan has no partition key: a LeadingKeys
# condition does not limit it (ForAllValues over no keys holds), so it must be a statement of
# its own, and every entry here is a read of the whole table.
ALLOWED_SCANS: dict[str, str] = {
    # wallet_ledger::Ledger::tenants: until `inboxctl wallet reindex` marked the wallet registry
    # complete (after an upgrade from a version without it), the wallets created before the
    # registry are found by a Scan of the wallet items.
    "ReconcileRole": "finds the wallets created before the registry until `inboxctl wallet reindex`",
}
TABLE_READS = {
    "dynamodb:GetItem",
    "dynamodb:Query",
    "dynamodb:BatchGetItem",
    "dynamodb:Scan",
    "dynamodb:PartiQLSelect",
}
TABLE_WRITES = {
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
}
# What each function does with bodies kept in BodyBucket; a function not named has no business
# there. Those that fail messages (process, reaper) remove a failed message's expiry tag.
BODY_ACTIONS: dict[str, set[str]] = {
    "IngestFunction": {"s3:PutObject", "s3:PutObjectTagging"},
    "ProcessFunction": {"s3:GetObject", "s3:DeleteObjectTagging"},
    "ReaperFunction": {"s3:DeleteObjectTagging"},
    "DeliverFunction": {"s3:GetObject"},
    # Stores Stripe's events as ingest stores webhooks.
    "CatchUpFunction": {"s3:PutObject", "s3:PutObjectTagging"},
}
BODY_BUCKET = "BodyBucket"

INGEST_FUNCTION = "IngestFunction"
WEBHOOK_PATH = "/webhooks/{source}"
WALLET_API_FUNCTION = "WalletApiFunction"
WALLET_PREFIX = "/wallets"
# The wallet API's routes (docs/wallet-api.md), each behind the IAM authorizer.
WALLET_ROUTES = [
    ("post", "/wallets/{tenant}/holds"),
    ("post", "/wallets/{tenant}/holds/{hold_id}/release"),
    ("get", "/wallets/{tenant}"),
    ("post", "/wallets/{tenant}/checkout-sessions"),
]

PSEUDO_PARAMETERS = {
    "AWS::Region": "us-east-1",
    "AWS::AccountId": "123456789012",
    "AWS::Partition": "aws",
    "AWS::StackName": "check",
    "AWS::StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/check/0",
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::NotificationARNs": [],
}


class _NoManagedPolicies:
    """The translator's managed-policy lookup, offline: the template names none."""

    def load(self) -> dict[str, str]:
        return {}


def load(template: Path) -> dict[str, Any]:
    from samcli.yamlhelper import yaml_parse  # long-form intrinsics, as SAM reads templates

    return yaml_parse(template.read_text(encoding="utf-8"))


def translate(sam: dict[str, Any]) -> dict[str, Any]:
    """The CloudFormation SAM would deploy (code locations stubbed: only IAM and routes matter)."""
    os.environ.setdefault("AWS_DEFAULT_REGION", PSEUDO_PARAMETERS["AWS::Region"])
    from samtranslator.translator.transform import transform

    doc = copy.deepcopy(sam)
    for resource in doc.get("Resources", {}).values():
        if resource.get("Type") == "AWS::Serverless::Function":
            resource.setdefault("Properties", {})["CodeUri"] = "s3://bucket/key"
    return transform(doc, dict(PSEUDO_PARAMETERS), _NoManagedPolicies())


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _statements(cfn: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(logical id, statement) of every IAM policy statement in the deployed template."""
    for name, resource in cfn.get("Resources", {}).items():
        kind = resource.get("Type")
        props = resource.get("Properties", {}) or {}
        documents: list[Any] = []
        if kind == "AWS::IAM::Role":
            documents = [p.get("PolicyDocument", {}) for p in props.get("Policies", []) or []]
        elif kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            documents = [props.get("PolicyDocument", {})]
        for document in documents:
            for statement in _as_list(document.get("Statement", [])):
                yield name, statement


def check_least_privilege(cfn: dict[str, Any]) -> list[str]:
    problems = []
    for name, statement in _statements(cfn):
        if statement.get("Effect") != "Allow":
            continue
        sid = statement.get("Sid", "")
        where = f"{name}, statement {sid or '(no Sid)'}"
        if "NotResource" in statement or "NotAction" in statement:
            problems.append(f"{where}: NotResource/NotAction grant everything else")
        resources = _as_list(statement.get("Resource", []))
        if "*" in resources and (name, sid) not in ALLOWED_WILDCARDS:
            problems.append(
                f'{where}: Resource "*" ({", ".join(map(str, _as_list(statement.get("Action"))))}); '
                "scope it, or add it to ALLOWED_WILDCARDS with the reason"
            )
        for action in _as_list(statement.get("Action", [])):
            if isinstance(action, str) and (action == "*" or action.endswith(":*")):
                problems.append(f"{where}: wildcard action {action}")
    for name, resource in cfn.get("Resources", {}).items():
        if resource.get("Type") != "AWS::IAM::Role":
            continue
        for arn in (resource.get("Properties", {}) or {}).get("ManagedPolicyArns", []) or []:
            policy = str(arn).rsplit("/", 1)[-1]
            if policy not in ALLOWED_MANAGED_POLICIES:
                problems.append(
                    f"{name}: managed policy {policy} (its statements allow Resource \"*\"); "
                    "give the function an explicit Role with scoped statements"
                )
    return problems


def _leading_keys(statement: dict[str, Any]) -> list[str] | None:
    """The `dynamodb:LeadingKeys` a statement is limited to (ForAllValues:StringLike), if any."""
    condition = (statement.get("Condition") or {}).get("ForAllValues:StringLike") or {}
    keys = condition.get("dynamodb:LeadingKeys")
    return None if keys is None else [str(k) for k in _as_list(keys)]


def leading_keys(cfn: dict[str, Any], role: str) -> list[str]:
    """The prefixes `role`'s table writes are limited to (those of its first write statement)."""
    for name, statement in _statements(cfn):
        actions = set(map(str, _as_list(statement.get("Action", []))))
        if name == role and statement.get("Effect") == "Allow" and actions & TABLE_WRITES:
            return _leading_keys(statement) or []
    return []


def check_leading_keys(cfn: dict[str, Any]) -> list[str]:
    problems = []
    for name, statement in _statements(cfn):
        if name not in LEADING_KEYS or statement.get("Effect") != "Allow":
            continue
        writes = sorted(set(map(str, _as_list(statement.get("Action", [])))) & TABLE_WRITES)
        if not writes:
            continue
        where = f"{name}, statement {statement.get('Sid') or '(no Sid)'}"
        keys = _leading_keys(statement)
        if keys is None:
            problems.append(
                f"{where}: {', '.join(writes)} without a dynamodb:LeadingKeys condition "
                f"(ForAllValues:StringLike {LEADING_KEYS[name]}): it may write any item"
            )
        elif sorted(keys) != sorted(LEADING_KEYS[name]):
            problems.append(
                f"{where}: dynamodb:LeadingKeys {keys}, expected exactly {LEADING_KEYS[name]}"
            )
    return problems


def _on_index(statement: dict[str, Any]) -> bool:
    return any("/index/" in json.dumps(r) for r in _as_list(statement.get("Resource")))


def leading_reads(cfn: dict[str, Any], role: str) -> list[str]:
    """The prefixes `role`'s table and index reads are limited to, `index:`-prefixed for the
    index's."""
    out = []
    for name, statement in _statements(cfn):
        actions = set(map(str, _as_list(statement.get("Action", []))))
        if name == role and statement.get("Effect") == "Allow" and actions & TABLE_READS:
            prefix = "index:" if _on_index(statement) else ""
            out += [prefix + k for k in _leading_keys(statement) or []]
    return sorted(set(out))


def _on_table(statement: dict[str, Any]) -> bool:
    """Whether a statement grants on the inbox table or its index (not its stream)."""
    return any(
        "InboxTable" in text and "/stream/" not in text
        for text in (json.dumps(r) for r in _as_list(statement.get("Resource")))
    )


def check_leading_reads(cfn: dict[str, Any]) -> list[str]:
    problems = []
    if set(READ_ACTIONS) != set(LEADING_READS):
        problems.append(
            f"check_template.py: READ_ACTIONS names {sorted(READ_ACTIONS)}, LEADING_READS "
            f"{sorted(LEADING_READS)}: every role with a read list has its read actions"
        )
    granted: dict[tuple[str, str], set[str]] = {}
    for name, statement in _statements(cfn):
        if statement.get("Effect") != "Allow" or not _on_table(statement):
            continue
        reads = sorted(set(map(str, _as_list(statement.get("Action", [])))) & TABLE_READS)
        if not reads:
            continue
        where = f"{name}, statement {statement.get('Sid') or '(no Sid)'}"
        if name not in LEADING_READS:
            problems.append(
                f"{where}: {', '.join(reads)} on the table, but {name} has no read list "
                "(LEADING_READS): a role reads only the prefixes its code reads"
            )
            continue
        target = "index" if _on_index(statement) else "table"
        if "dynamodb:Scan" in reads:
            if name not in ALLOWED_SCANS:
                problems.append(f"{where}: dynamodb:Scan reads every item of the table")
            elif reads != ["dynamodb:Scan"] or target != "table":
                problems.append(
                    f"{where}: dynamodb:Scan beside {', '.join(r for r in reads if r != 'dynamodb:Scan')} "
                    "(a Scan has no leading key: give it a statement of its own)"
                )
            else:
                continue
        granted.setdefault((name, target), set()).update(r for r in reads if r != "dynamodb:Scan")
        expected = LEADING_READS[name][target]
        keys = _leading_keys(statement)
        if not expected:
            problems.append(f"{where}: {', '.join(reads)} on the {target}, which {name}'s code never reads")
        elif keys is None:
            problems.append(
                f"{where}: {', '.join(reads)} without a dynamodb:LeadingKeys condition "
                f"(ForAllValues:StringLike {expected}): it may read any item"
            )
        elif sorted(keys) != sorted(expected):
            problems.append(f"{where}: read dynamodb:LeadingKeys {keys}, expected exactly {expected}")
    for name, targets in READ_ACTIONS.items():
        if not any(role == name for role, _ in _statements(cfn)):
            continue  # a role the template does not have (or has under a condition)
        for target, actions in targets.items():
            have = granted.get((name, target), set())
            if have != actions:
                missing = sorted(actions - have)
                extra = sorted(have - actions)
                problems.append(
                    f"{name}: read actions on the {target} {sorted(have)}, expected exactly "
                    f"{sorted(actions)}"
                    + (f" (missing {', '.join(missing)}: AccessDenied in AWS)" if missing else "")
                    + (f" ({', '.join(extra)} more than its code does)" if extra else "")
                )
    return problems


def check_trust(sam: dict[str, Any]) -> list[str]:
    """No role trusts a whole account (its root principal): a named principal or a service."""
    problems = []
    for name, resource in (sam.get("Resources") or {}).items():
        if resource.get("Type") != "AWS::IAM::Role":
            continue
        document = (resource.get("Properties") or {}).get("AssumeRolePolicyDocument") or {}
        for statement in _as_list(document.get("Statement")):
            principal = (statement or {}).get("Principal") or {}
            trusted = json.dumps(principal.get("AWS")) if isinstance(principal, dict) else ""
            if ":root" in trusted or principal == "*" or '"*"' in trusted:
                problems.append(
                    f"{name}: trusts a whole account ({trusted}): name the principal that assumes it"
                )
    return problems


def _schedule_rate_seconds(function: dict[str, Any]) -> list[int | None]:
    """The period of every schedule event of a function (None: not a rate expression)."""
    periods: list[int | None] = []
    for event in ((function.get("Properties") or {}).get("Events") or {}).values():
        if (event or {}).get("Type") not in ("Schedule", "ScheduleV2"):
            continue
        expression = str(((event or {}).get("Properties") or {}).get("ScheduleExpression", ""))
        units = {"minute": 60, "minutes": 60, "hour": 3600, "hours": 3600, "day": 86400, "days": 86400}
        parts = expression.removeprefix("rate(").removesuffix(")").split()
        if expression.startswith("rate(") and len(parts) == 2 and parts[1] in units:
            periods.append(int(parts[0]) * units[parts[1]])
        else:
            periods.append(None)
    return periods


def check_schedules(sam: dict[str, Any]) -> list[str]:
    problems = []
    for name, resource in sam.get("Resources", {}).items():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        periods = _schedule_rate_seconds(resource)
        if not periods:
            continue
        config = (resource.get("Properties") or {}).get("EventInvokeConfig")
        if config is None:
            problems.append(
                f"{name}: scheduled without an EventInvokeConfig (Lambda retries a failed run "
                "twice by default, beside the next one)"
            )
            continue
        if any(p is not None and p <= 60 for p in periods):
            retries = config.get("MaximumRetryAttempts")
            age = config.get("MaximumEventAgeInSeconds")
            if retries != 0 or not isinstance(age, int) or age > 60:
                problems.append(
                    f"{name}: scheduled every minute with EventInvokeConfig MaximumRetryAttempts "
                    f"{retries}, MaximumEventAgeInSeconds {age}: a retried run overlaps the next "
                    "(want 0 and at most 60)"
                )
    return problems


def check_secret_values(sam: dict[str, Any]) -> list[str]:
    problems = []
    for name, resource in sam.get("Resources", {}).items():
        if resource.get("Type") != "AWS::SecretsManager::Secret":
            continue
        props = resource.get("Properties", {}) or {}
        for key in ("GenerateSecretString", "SecretString"):
            if key in props:
                problems.append(
                    f"{name}: {key} puts the secret's value in the template's reach (an edit "
                    "regenerates or overwrites the real secrets); create the secret outside the "
                    "stack and pass its name in"
                )
    return problems


def check_routes(cfn: dict[str, Any]) -> list[str]:
    """Every method of the webhook path is integrated with the ingest function."""
    for resource in cfn.get("Resources", {}).values():
        if resource.get("Type") != "AWS::ApiGatewayV2::Api":
            continue
        body = (resource.get("Properties", {}) or {}).get("Body", {}) or {}
        methods = (body.get("paths", {}) or {}).get(WEBHOOK_PATH, {}) or {}
        for method, operation in methods.items():
            if method != "x-amazon-apigateway-any-method":
                continue
            uri = str((operation or {}).get("x-amazon-apigateway-integration", {}).get("uri"))
            if INGEST_FUNCTION in uri:
                return []
        return [
            f"{WEBHOOK_PATH} routes only {sorted(methods)} to {INGEST_FUNCTION}: other methods get "
            "the gateway's 404 instead of the function's 405; add an ANY route"
        ]
    return [f"no HTTP API routes {WEBHOOK_PATH}"]


def _http_api_bodies(cfn: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for resource in cfn.get("Resources", {}).values():
        if resource.get("Type") == "AWS::ApiGatewayV2::Api":
            yield (resource.get("Properties", {}) or {}).get("Body", {}) or {}


def check_wallet_routes(cfn: dict[str, Any]) -> list[str]:
    """Every /wallets route has the IAM authorizer (SigV4); the wallet API's routes are there."""
    problems = []
    seen = set()
    for body in _http_api_bodies(cfn):
        schemes = ((body.get("components") or {}).get("securitySchemes") or {})
        sigv4 = {
            name for name, scheme in schemes.items()
            if (scheme or {}).get("x-amazon-apigateway-authtype") == "awsSigv4"
        }
        for path, methods in (body.get("paths", {}) or {}).items():
            if path != WALLET_PREFIX and not path.startswith(WALLET_PREFIX + "/"):
                continue
            for method, operation in (methods or {}).items():
                operation = operation or {}
                shown = "ANY" if method == "x-amazon-apigateway-any-method" else method.upper()
                security = operation.get("security") or []
                if not any(set(requirement or {}) & sigv4 for requirement in security):
                    problems.append(
                        f"{shown} {path}: no IAM authorizer (Auth: Authorizer: AWS_IAM); a wallet "
                        "route must never be reachable without SigV4 in AWS"
                    )
                uri = str((operation.get("x-amazon-apigateway-integration") or {}).get("uri"))
                if WALLET_API_FUNCTION in uri:
                    seen.add((method, path))
    for method, path in WALLET_ROUTES:
        if (method, path) not in seen:
            problems.append(f"{method.upper()} {path}: not routed to {WALLET_API_FUNCTION}")
    return problems


def _alarm_metrics(alarm: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(namespace, metric name, dimensions) of every metric an alarm reads (plain or math)."""
    props = alarm.get("Properties", {}) or {}
    found = []
    if "MetricName" in props:
        found.append((props.get("Namespace"), props.get("MetricName"), props.get("Dimensions")))
    for query in props.get("Metrics", []) or []:
        metric = ((query or {}).get("MetricStat") or {}).get("Metric") or {}
        if metric:
            found.append((metric.get("Namespace"), metric.get("MetricName"), metric.get("Dimensions")))
    return [
        (str(ns), str(name), {d.get("Name"): d.get("Value") for d in dims or []})
        for ns, name, dims in found
    ]


def check_alarms(sam: dict[str, Any]) -> list[str]:
    resources = sam.get("Resources", {})
    watched = [
        metric
        for resource in resources.values()
        if resource.get("Type") == "AWS::CloudWatch::Alarm"
        for metric in _alarm_metrics(resource)
    ]

    def has(namespace: str, name: str, **dimensions: Any) -> bool:
        return any(
            ns == namespace and n == name and all(dims.get(k) == v for k, v in dimensions.items())
            for ns, n, dims in watched
        )

    problems = []
    for function, resource in resources.items():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        for metric in ("Errors", "Throttles"):
            if not has("AWS/Lambda", metric, FunctionName={"Ref": function}):
                problems.append(f"{function}: no alarm on its Lambda {metric}")
        events = ((resource.get("Properties") or {}).get("Events") or {}).values()
        streamed = any((e or {}).get("Type") in ("DynamoDB", "Kinesis") for e in events)
        if streamed and not has("AWS/Lambda", "IteratorAge", FunctionName={"Ref": function}):
            problems.append(f"{function}: a stream invokes it but no alarm watches its IteratorAge")
    for namespace, name, what in [
        ("WebhookIngestor/Ingest", "ServerErrors", "the ingest function's 5xx"),
        ("WebhookIngestor/Ingest", "Unauthorized", "a spike of 401s (a bad secret rotation)"),
        ("AWS/ApiGateway", "5xx", "the gateway's 5xx"),
        ("AWS/SQS", "NumberOfMessagesSent", "new arrivals in the quarantine queue"),
        ("WebhookIngestor/Wallet", "UnmatchedPayments", "payments unmatched past the window"),
        ("WebhookIngestor/Wallet", "ForgedInternalEvent", "internal wallet events refused as forged"),
        ("WebhookIngestor/CatchUp", "CaughtUp", "Stripe events caught up (their webhooks were lost)"),
    ]:
        if not has(namespace, name):
            problems.append(f"no alarm on {what} ({namespace} {name})")
    for namespace, name, dims in watched:
        if namespace.startswith("WebhookIngestor/") and dims.get("Stage") != {"Ref": "Stage"}:
            problems.append(
                f"the alarm on {namespace} {name} does not filter on the Stage dimension: "
                "another stage's stack in the account would trip it"
            )
    return problems


def _role_of(function: dict[str, Any]) -> str | None:
    role = (function.get("Properties", {}) or {}).get("Role")
    if isinstance(role, dict) and "Fn::GetAtt" in role:
        return str(role["Fn::GetAtt"][0]).split(".")[0]
    return None


def _on_bucket(statement: dict[str, Any]) -> bool:
    return any(BODY_BUCKET in str(r) for r in _as_list(statement.get("Resource", [])))


def check_bodies(sam: dict[str, Any], cfn: dict[str, Any]) -> list[str]:
    """Each function's S3 actions on the body bucket are what BODY_ACTIONS says it needs."""
    statements = list(_statements(cfn))
    problems = []
    for name, function in sam.get("Resources", {}).items():
        if function.get("Type") != "AWS::Serverless::Function":
            continue
        role = _role_of(function)
        granted = {
            str(action)
            for owner, statement in statements
            if owner == role and statement.get("Effect") == "Allow" and _on_bucket(statement)
            for action in _as_list(statement.get("Action", []))
        }
        needed = BODY_ACTIONS.get(name, set())
        env = ((function.get("Properties", {}) or {}).get("Environment", {}) or {}).get("Variables", {}) or {}
        if needed - granted:
            problems.append(
                f"{name}: missing {', '.join(sorted(needed - granted))} on {BODY_BUCKET} "
                "(a failed message's body would expire, or a body could not be read or written)"
            )
        if granted - needed:
            problems.append(
                f"{name}: {', '.join(sorted(granted - needed))} on {BODY_BUCKET} is more than it needs"
            )
        if needed and "BODY_BUCKET" not in env:
            problems.append(f"{name}: no BODY_BUCKET, though it works on bodies kept in {BODY_BUCKET}")
    return problems


def ingest_timeout(sam: dict[str, Any]) -> int:
    """The ingest function's timeout in seconds (its own, else the Globals', else Lambda's 3)."""
    function = sam["Resources"][INGEST_FUNCTION].get("Properties", {}) or {}
    timeout = function.get("Timeout")
    if timeout is None:
        timeout = sam.get("Globals", {}).get("Function", {}).get("Timeout", 3)
    if isinstance(timeout, dict):
        mapping = timeout.get("Fn::FindInMap")
        if not mapping:
            raise ValueError(f"{INGEST_FUNCTION}'s Timeout must be a number or a FindInMap")
        table, key, field = mapping
        timeout = sam["Mappings"][table][key][field]
    return int(timeout)


DELIVER_FUNCTION = "DeliverFunction"


def check_deliver_parallelism(sam: dict[str, Any]) -> list[str]:
    """The deliver function's stream batches run several per shard: one batch waiting on a slow
    destination must not hold up the shard's other deliveries."""
    function = sam.get("Resources", {}).get(DELIVER_FUNCTION)
    if function is None:
        return []
    problems = []
    events = (function.get("Properties", {}) or {}).get("Events", {}) or {}
    for name, event in events.items():
        if event.get("Type") != "DynamoDB":
            continue
        factor = (event.get("Properties", {}) or {}).get("ParallelizationFactor", 1)
        if not isinstance(factor, int) or factor < 2:
            problems.append(
                f"{DELIVER_FUNCTION}.{name}: ParallelizationFactor {factor}; a batch held up by "
                "one slow destination holds up every delivery of its shard (set 2 to 10)"
            )
    return problems


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--template", type=Path, default=DEFAULT_TEMPLATE)
    parser.add_argument("--ingest-timeout", action="store_true")
    parser.add_argument("--leading-keys", metavar="ROLE")
    parser.add_argument("--leading-reads", metavar="ROLE")
    args = parser.parse_args(argv)
    sam = load(args.template)
    if args.ingest_timeout:
        print(ingest_timeout(sam))
        return 0
    cfn = translate(sam)
    if args.leading_keys:
        print("\n".join(leading_keys(cfn, args.leading_keys)))
        return 0
    if args.leading_reads:
        print("\n".join(leading_reads(cfn, args.leading_reads)))
        return 0
    problems = (
        check_least_privilege(cfn)
        + check_leading_keys(cfn)
        + check_leading_reads(cfn)
        + check_trust(sam)
        + check_schedules(sam)
        + check_secret_values(sam)
        + check_routes(cfn)
        + check_wallet_routes(cfn)
        + check_alarms(sam)
        + check_deliver_parallelism(sam)
        + check_bodies(sam, cfn)
    )
    for problem in problems:
        print(f"{args.template.name}: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(
        f"{args.template.name}: least privilege, leading keys (writes, and every role's reads), schedules, secret values, routes, "
        "the wallet API's IAM authorizer, bodies, alarms and the deliver stream's parallelism checked"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
