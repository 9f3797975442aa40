#!/usr/bin/env python3
"""Derive the DynamoDB inbox table schema from template.yaml -- the ONE place it is derived.

The deployed table (CloudFormation) and every local/test table (DynamoDB Local) must have the same
keys, indexes, stream and TTL. template.yaml is the source of truth; this script reads the
`AWS::DynamoDB::Table` resource from it, so nothing else restates the schema.

Usage
-----
    table_from_template.py [--template template.yaml] [--resource InboxTable] print
    table_from_template.py [--template ...] [--resource ...] create \\
        --table-name NAME [--endpoint-url http://127.0.0.1:8000] [--region us-east-1]

`print` writes ONE JSON object to stdout (sorted keys, 2-space indent, trailing newline),
shaped like a DynamoDB CreateTable request without TableName, plus one extra key:

    {
      "AttributeDefinitions":   [{"AttributeName": "pk", "AttributeType": "S"}, ...],
      "BillingMode":            "PAY_PER_REQUEST",
      "GlobalSecondaryIndexes": [{"IndexName": "open-index",
                                  "KeySchema": [{"AttributeName": "open_shard", "KeyType": "HASH"},
                                                {"AttributeName": "open_due", "KeyType": "RANGE"}],
                                  "Projection": {"ProjectionType": "INCLUDE",
                                                 "NonKeyAttributes": [...]}}],
      "KeySchema":              [{"AttributeName": "pk", "KeyType": "HASH"},
                                 {"AttributeName": "sk", "KeyType": "RANGE"}],
      "StreamSpecification":    {"StreamEnabled": true, "StreamViewType": "NEW_IMAGE"},
      "TimeToLiveAttribute":    "expires_at"
    }

Stable contract (a Rust test consumes it): exactly these top-level keys are emitted when the
template defines them -- KeySchema, AttributeDefinitions, BillingMode, StreamSpecification,
GlobalSecondaryIndexes, TimeToLiveAttribute (only when TTL is enabled). List order follows
the template. Everything except TimeToLiveAttribute can be passed as-is to CreateTable.
Per-index ProvisionedThroughput is included only for a PROVISIONED table (then the table's
ProvisionedThroughput is emitted too). Properties that CreateTable does not need locally
(SSE, point-in-time recovery, deletion protection, tags) and any property whose value is an
intrinsic function (e.g. `DeletionProtectionEnabled: !If [...]`) are skipped.

`create` creates the table with boto3 from that definition, waits until it is ACTIVE,
then enables TTL. It is idempotent: an existing table is left as is (TTL is still ensured).
Credentials/region come from the usual AWS environment; defaults for a local emulator are
filled in (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY=testing, region us-east-1) when unset.

Exit status: 0 ok, 2 usage or template error, 1 AWS error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import yaml

DEFAULT_TEMPLATE = Path(__file__).resolve().parent.parent / "template.yaml"


class _Intrinsic:
    """Marker for a value written with a CloudFormation short tag (!Ref, !If, ...)."""

    def __init__(self, tag: str, value: Any) -> None:
        self.tag = tag
        self.value = value

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"{self.tag} {self.value!r}"


class CfnLoader(yaml.SafeLoader):
    """SafeLoader that accepts CloudFormation short-form intrinsic tags (!Ref, !Sub, !GetAtt, ...)."""


def _construct_intrinsic(loader: CfnLoader, tag_suffix: str, node: yaml.Node) -> _Intrinsic:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    return _Intrinsic("!" + tag_suffix, value)


CfnLoader.add_multi_constructor("!", _construct_intrinsic)


def _is_intrinsic(value: Any) -> bool:
    if isinstance(value, _Intrinsic):
        return True
    # long form: {"Ref": ...} / {"Fn::If": ...}
    return (
        isinstance(value, dict)
        and len(value) == 1
        and (next(iter(value)) == "Ref" or str(next(iter(value))).startswith("Fn::"))
    )


def _plain(value: Any, where: str) -> Any:
    """Return value if it contains no intrinsic function anywhere, else raise."""
    if _is_intrinsic(value):
        raise ValueError(f"{where} uses an intrinsic function; the local schema needs a literal")
    if isinstance(value, dict):
        return {k: _plain(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def load_table_properties(template: Path, resource: str) -> dict[str, Any]:
    with open(template, encoding="utf-8") as fh:
        doc = yaml.load(fh, Loader=CfnLoader)  # noqa: S506 - CfnLoader is a SafeLoader
    resources = (doc or {}).get("Resources") or {}
    if resource not in resources:
        raise ValueError(f"resource {resource!r} not found in {template}")
    res = resources[resource]
    if res.get("Type") != "AWS::DynamoDB::Table":
        raise ValueError(f"resource {resource!r} is {res.get('Type')!r}, not AWS::DynamoDB::Table")
    props = res.get("Properties") or {}
    # Drop top-level properties written as intrinsic functions (conditional settings).
    return {k: v for k, v in props.items() if not _is_intrinsic(v)}


def table_definition(template: Path, resource: str) -> dict[str, Any]:
    """The CreateTable-shaped definition (no TableName) plus TimeToLiveAttribute."""
    props = load_table_properties(template, resource)
    out: dict[str, Any] = {}

    for key in ("KeySchema", "AttributeDefinitions"):
        if key not in props:
            raise ValueError(f"{resource}.{key} is required")
        out[key] = _plain(props[key], f"{resource}.{key}")

    billing = _plain(props.get("BillingMode", "PROVISIONED"), f"{resource}.BillingMode")
    out["BillingMode"] = billing
    provisioned = billing == "PROVISIONED"
    if provisioned:
        out["ProvisionedThroughput"] = _plain(
            props.get("ProvisionedThroughput") or {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
            f"{resource}.ProvisionedThroughput",
        )

    stream = props.get("StreamSpecification")
    if stream is not None:
        stream = _plain(stream, f"{resource}.StreamSpecification")
        out["StreamSpecification"] = {
            "StreamEnabled": True,
            "StreamViewType": stream["StreamViewType"],
        }

    gsis = props.get("GlobalSecondaryIndexes")
    if gsis:
        out["GlobalSecondaryIndexes"] = []
        for i, gsi in enumerate(_plain(gsis, f"{resource}.GlobalSecondaryIndexes")):
            item = {
                "IndexName": gsi["IndexName"],
                "KeySchema": gsi["KeySchema"],
                "Projection": gsi["Projection"],
            }
            if provisioned:
                item["ProvisionedThroughput"] = gsi.get("ProvisionedThroughput") or out[
                    "ProvisionedThroughput"
                ]
            out["GlobalSecondaryIndexes"].append(item)

    lsis = props.get("LocalSecondaryIndexes")
    if lsis:
        out["LocalSecondaryIndexes"] = [
            {"IndexName": l["IndexName"], "KeySchema": l["KeySchema"], "Projection": l["Projection"]}
            for l in _plain(lsis, f"{resource}.LocalSecondaryIndexes")
        ]

    ttl = props.get("TimeToLiveSpecification")
    if ttl is not None:
        ttl = _plain(ttl, f"{resource}.TimeToLiveSpecification")
        if ttl.get("Enabled") in (True, "true", "True"):
            out["TimeToLiveAttribute"] = ttl["AttributeName"]

    return out


def _client(endpoint_url: str | None, region: str | None):
    import boto3  # imported lazily: `print` must work without boto3

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    # Without --endpoint-url boto3 finds the endpoint itself: $AWS_ENDPOINT_URL_DYNAMODB (DynamoDB
    # Local), else $AWS_ENDPOINT_URL.
    return boto3.client("dynamodb", endpoint_url=endpoint_url or None, region_name=region)


def create_table(defn: dict[str, Any], table_name: str, endpoint_url: str | None, region: str | None,
                 timeout_s: float = 60.0) -> bool:
    """Create the table (idempotent), wait for ACTIVE, ensure TTL. Returns True if created."""
    client = _client(endpoint_url, region)
    request = {k: v for k, v in defn.items() if k != "TimeToLiveAttribute"}
    created = False
    try:
        client.create_table(TableName=table_name, **request)
        created = True
    except client.exceptions.ResourceInUseException:
        pass  # already exists: leave it as it is

    deadline = time.monotonic() + timeout_s
    while True:
        status = client.describe_table(TableName=table_name)["Table"]["TableStatus"]
        if status == "ACTIVE":
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"table {table_name} not ACTIVE after {timeout_s:.0f}s (status {status})")
        time.sleep(0.2)

    ttl_attr = defn.get("TimeToLiveAttribute")
    if ttl_attr:
        desc = client.describe_time_to_live(TableName=table_name)["TimeToLiveDescription"]
        if not (desc.get("TimeToLiveStatus") in ("ENABLED", "ENABLING") and desc.get("AttributeName") == ttl_attr):
            client.update_time_to_live(
                TableName=table_name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl_attr},
            )
    return created


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--template", type=Path, default=DEFAULT_TEMPLATE,
                        help=f"SAM/CloudFormation template (default: {DEFAULT_TEMPLATE})")
    parser.add_argument("--resource", default="InboxTable", help="logical id of the table (default: InboxTable)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("print", help="print the CreateTable-shaped JSON definition")
    create = sub.add_parser("create", help="create the table (idempotent) and enable TTL")
    create.add_argument("--table-name", required=True)
    create.add_argument("--endpoint-url", default=None, help="DynamoDB's, e.g. http://127.0.0.1:8000 (default: $AWS_ENDPOINT_URL_DYNAMODB, else $AWS_ENDPOINT_URL)")
    create.add_argument("--region", default=None, help="default: $AWS_REGION, $AWS_DEFAULT_REGION or us-east-1")
    args = parser.parse_args(argv)

    try:
        defn = table_definition(args.template, args.resource)
    except (OSError, ValueError, KeyError, TypeError, yaml.YAMLError) as exc:
        print(f"table_from_template: {exc}", file=sys.stderr)
        return 2

    if args.command == "print":
        json.dump(defn, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
        return 0

    try:
        created = create_table(defn, args.table_name, args.endpoint_url, args.region)
    except Exception as exc:  # botocore errors, timeouts, connection refused
        print(f"table_from_template: cannot create table {args.table_name}: {exc}", file=sys.stderr)
        return 1
    print(f"table {args.table_name}: {'created' if created else 'already exists'}, ACTIVE", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
