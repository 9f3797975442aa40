#!/usr/bin/env python3
"""Derive the local SQS queues from template.yaml -- the queues' settings are not restated anywhere.

The deployed queues (CloudFormation) and the local ones (moto) must behave alike: same
visibility timeout, retention and redrive policy (retry -> quarantine after maxReceiveCount).
This script reads every `AWS::SQS::Queue` resource of the template and turns its Properties into
CreateQueue attributes, resolving the intrinsic functions those settings use:

  !FindInMap [Map, Key, Key]     from the template's Mappings
  !Ref Parameter                 the parameter's Default
  !GetAtt Queue.Arn / .QueueName the local queue's ARN / name (so a redrive policy points at the
                                 local dead-letter queue)

Properties a local queue does not need are skipped: encryption (SqsManagedSseEnabled, Kms*),
Tags, QueueName (local names are given on the command line). Any other property whose value
cannot be resolved is an error, so a new setting in the template is never dropped silently.

Usage
-----
    queues_from_template.py [--template template.yaml] print --queue RetryQueue=webhook-retry-local ...
    queues_from_template.py [--template ...] create --queue RetryQueue=webhook-retry-local \\
        --queue QuarantineQueue=webhook-quarantine-local [--endpoint-url URL] [--region REGION]

--queue LOGICAL_ID=NAME names the local queue of a template resource; every AWS::SQS::Queue of the
template must be named (a redrive target has to exist locally).

`print` writes one JSON object to stdout: logical id -> {"QueueName", "Attributes"} (CreateQueue
request shape; RedrivePolicy is a JSON string, as SQS wants it), in creation order (dead-letter
queues first). The ARNs in it use moto's default account (123456789012) and the region.

`create` creates the queues with boto3 in that order (idempotent: an existing queue gets its
attributes set to the template's) and prints one line per queue to stdout:

    <LogicalId> <QueueUrl> <QueueArn>

(space-separated), e.g. for a shell: `awk '$1=="RetryQueue"{print $2}'`.
Credentials/region come from the usual AWS environment; local defaults (testing/testing,
us-east-1) are filled in when unset.

Exit status: 0 ok, 2 usage or template error, 1 AWS error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from table_from_template import CfnLoader, _Intrinsic  # noqa: E402  (same directory)

DEFAULT_TEMPLATE = Path(__file__).resolve().parent.parent / "template.yaml"
DEFAULT_ACCOUNT = "123456789012"  # moto's default account id

# Queue properties a local queue does not need (or that moto ignores anyway).
SKIPPED = {
    "SqsManagedSseEnabled",
    "KmsMasterKeyId",
    "KmsDataKeyReusePeriodSeconds",
    "Tags",
    "QueueName",
}
# Properties passed to CreateQueue as attributes (CloudFormation name == SQS attribute name).
ATTRIBUTES = {
    "VisibilityTimeout",
    "MessageRetentionPeriod",
    "DelaySeconds",
    "MaximumMessageSize",
    "ReceiveMessageWaitTimeSeconds",
    "RedrivePolicy",
    "RedriveAllowPolicy",
    "FifoQueue",
    "ContentBasedDeduplication",
    "DeduplicationScope",
    "FifoThroughputLimit",
}


def load_template(template: Path) -> dict[str, Any]:
    """The template as plain data; short-form intrinsics become `_Intrinsic` objects."""
    with open(template, encoding="utf-8") as fh:
        doc = yaml.load(fh, Loader=CfnLoader)  # noqa: S506 - CfnLoader is a SafeLoader
    if not isinstance(doc, dict):
        raise ValueError(f"{template} is not a CloudFormation template")
    return doc


def _intrinsic(value: Any) -> tuple[str, Any] | None:
    """(function name, argument) for a short (`!GetAtt`) or long (`Fn::GetAtt`) intrinsic."""
    if isinstance(value, _Intrinsic):
        name = value.tag[1:]
        return ("Ref" if name == "Ref" else "Fn::" + name), value.value
    if isinstance(value, dict) and len(value) == 1:
        (key, arg), = value.items()
        if key == "Ref" or str(key).startswith("Fn::"):
            return key, arg
    return None


class Resolver:
    """Resolves the intrinsic functions local settings need; anything else raises ValueError."""

    def __init__(self, doc: dict[str, Any], getatt: dict[str, dict[str, str]] | None = None) -> None:
        self.mappings = doc.get("Mappings") or {}
        self.parameters = doc.get("Parameters") or {}
        self.getatt = getatt or {}

    def __call__(self, value: Any, where: str) -> Any:
        fn = _intrinsic(value)
        if fn is None:
            if isinstance(value, dict):
                return {k: self(v, f"{where}.{k}") for k, v in value.items()}
            if isinstance(value, list):
                return [self(v, f"{where}[{i}]") for i, v in enumerate(value)]
            return value
        name, arg = fn
        if name == "Fn::FindInMap":
            m, k1, k2 = (self(a, where) for a in arg)
            try:
                return self.mappings[m][k1][k2]
            except KeyError:
                raise ValueError(f"{where}: !FindInMap [{m}, {k1}, {k2}] is not in Mappings") from None
        if name == "Ref":
            if arg in self.parameters and "Default" in self.parameters[arg]:
                return self.parameters[arg]["Default"]
            raise ValueError(f"{where}: !Ref {arg} cannot be resolved locally (not a parameter with a Default)")
        if name == "Fn::GetAtt":
            resource, attr = arg.split(".", 1) if isinstance(arg, str) else arg
            try:
                return self.getatt[resource][attr]
            except KeyError:
                raise ValueError(f"{where}: !GetAtt {resource}.{attr} cannot be resolved locally") from None
        raise ValueError(f"{where}: {name} cannot be resolved locally")


def queue_resources(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Logical id -> Properties of every AWS::SQS::Queue, in template order."""
    return {
        lid: (res.get("Properties") or {})
        for lid, res in (doc.get("Resources") or {}).items()
        if isinstance(res, dict) and res.get("Type") == "AWS::SQS::Queue"
    }


def _refs(value: Any) -> set[str]:
    """Logical ids named by !GetAtt anywhere in value."""
    fn = _intrinsic(value)
    if fn is not None:
        name, arg = fn
        if name == "Fn::GetAtt":
            return {(arg.split(".", 1) if isinstance(arg, str) else arg)[0]}
        return _refs(arg)
    if isinstance(value, dict):
        return set().union(*(_refs(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_refs(v) for v in value)) if value else set()
    return set()


def _sqs_value(value: Any) -> str:
    """SQS attributes are strings; policies are JSON documents."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def queue_definitions(doc: dict[str, Any], names: dict[str, str], region: str,
                      account: str = DEFAULT_ACCOUNT) -> dict[str, dict[str, Any]]:
    """Logical id -> {"QueueName", "Attributes"}, dead-letter targets before their sources."""
    queues = queue_resources(doc)
    if not queues:
        raise ValueError("the template has no AWS::SQS::Queue resource")
    unknown = sorted(set(names) - set(queues))
    if unknown:
        raise ValueError(f"not an AWS::SQS::Queue of the template: {', '.join(unknown)}")
    unnamed = sorted(set(queues) - set(names))
    if unnamed:
        raise ValueError(f"name every queue of the template (--queue ID=NAME): missing {', '.join(unnamed)}")

    getatt = {
        lid: {"Arn": f"arn:aws:sqs:{region}:{account}:{name}", "QueueName": name}
        for lid, name in names.items()
    }
    resolve = Resolver(doc, getatt)

    # Creation order: a queue after every queue it references (its dead-letter queue).
    order: list[str] = []

    def visit(lid: str, path: tuple[str, ...]) -> None:
        if lid in order:
            return
        if lid in path:
            raise ValueError(f"queues reference each other in a cycle: {' -> '.join(path + (lid,))}")
        for dep in sorted(_refs(queues[lid]) & set(queues)):
            visit(dep, path + (lid,))
        order.append(lid)

    for lid in queues:
        visit(lid, ())

    out: dict[str, dict[str, Any]] = {}
    for lid in order:
        attrs: dict[str, str] = {}
        for prop, value in queues[lid].items():
            if prop in SKIPPED:
                continue
            if prop not in ATTRIBUTES:
                raise ValueError(f"{lid}.{prop}: unknown queue property (add it to ATTRIBUTES or SKIPPED)")
            attrs[prop] = _sqs_value(resolve(value, f"{lid}.{prop}"))
        out[lid] = {"QueueName": names[lid], "Attributes": attrs}
    return out


def create_queues(defs: dict[str, dict[str, Any]], endpoint_url: str | None,
                  region: str) -> dict[str, tuple[str, str]]:
    """Creates (or updates) the queues in order; logical id -> (url, arn)."""
    import boto3  # lazily: `print` works without boto3

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    sqs = boto3.client("sqs", endpoint_url=endpoint_url, region_name=region)
    out: dict[str, tuple[str, str]] = {}
    for lid, d in defs.items():
        try:
            url = sqs.create_queue(QueueName=d["QueueName"], Attributes=d["Attributes"])["QueueUrl"]
        except sqs.exceptions.QueueNameExists:
            # exists with other attributes: make it match the template
            url = sqs.get_queue_url(QueueName=d["QueueName"])["QueueUrl"]
            sqs.set_queue_attributes(QueueUrl=url, Attributes=d["Attributes"])
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        out[lid] = (url, arn)
    return out


def _parse_names(pairs: list[str]) -> dict[str, str]:
    names: dict[str, str] = {}
    for p in pairs:
        lid, sep, name = p.partition("=")
        if not sep or not lid or not name:
            raise ValueError(f"--queue expects LOGICAL_ID=NAME, got {p!r}")
        names[lid] = name
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--template", type=Path, default=DEFAULT_TEMPLATE,
                        help=f"SAM/CloudFormation template (default: {DEFAULT_TEMPLATE})")
    sub = parser.add_subparsers(dest="command", required=True)
    for cmd, text in (("print", "print the CreateQueue-shaped definitions as JSON"),
                      ("create", "create the queues (idempotent), print '<LogicalId> <url> <arn>' lines")):
        p = sub.add_parser(cmd, help=text)
        p.add_argument("--queue", action="append", default=[], metavar="LOGICAL_ID=NAME",
                       help="local name of a template queue (repeat for each queue)")
        p.add_argument("--region", default=None, help="default: $AWS_REGION, $AWS_DEFAULT_REGION or us-east-1")
        if cmd == "create":
            p.add_argument("--endpoint-url", default=None,
                           help="e.g. http://127.0.0.1:5000 (default: $AWS_ENDPOINT_URL)")
    args = parser.parse_args(argv)
    region = args.region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"

    try:
        defs = queue_definitions(load_template(args.template), _parse_names(args.queue), region)
    except (OSError, ValueError, KeyError, TypeError, yaml.YAMLError) as exc:
        print(f"queues_from_template: {exc}", file=sys.stderr)
        return 2

    if args.command == "print":
        json.dump(defs, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0

    try:
        created = create_queues(defs, args.endpoint_url or os.environ.get("AWS_ENDPOINT_URL") or None, region)
    except Exception as exc:  # botocore errors, connection refused
        print(f"queues_from_template: cannot create the queues: {exc}", file=sys.stderr)
        return 1
    for lid, (url, arn) in created.items():
        print(f"{lid} {url} {arn}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
