#!/usr/bin/env python3
"""Derive the local body bucket from template.yaml -- the bucket's settings are not restated anywhere.

Bodies above the inline limit go to the S3 bucket `BodyBucket` (an `AWS::S3::Bucket` of the
template). Locally, the emulator's S3 holds them; this script creates that bucket with the
template's settings, as scripts/table_from_template.py does for the table and
scripts/queues_from_template.py for the queues:

  BucketEncryption                 PutBucketEncryption (its ServerSideEncryptionConfiguration
                                   list is the request's Rules, ServerSideEncryptionByDefault
                                   its ApplyServerSideEncryptionByDefault)
  PublicAccessBlockConfiguration   PutPublicAccessBlock
  OwnershipControls                PutBucketOwnershipControls
  LifecycleConfiguration           PutBucketLifecycleConfiguration, its rules turned from
                                   CloudFormation's shape (ExpirationInDays, TagFilters,
                                   AbortIncompleteMultipartUpload) into the S3 API's
  Tags, BucketName                 skipped (local names are given on the command line)

`!Ref Parameter` resolves to the parameter's Default (e.g. BodyExpirationDays). Any other
property, or a lifecycle rule field this script does not translate, is an error, so a new setting
in the template is never dropped silently. (The emulator keeps the settings; it does not expire
objects.)

Usage
-----
    bucket_from_template.py print [--template template.yaml] [--resource BodyBucket]
    bucket_from_template.py create --bucket-name webhook-bodies-local [--template ...] \\
        [--endpoint-url URL] [--region REGION]

`print` writes the requests as one JSON object to stdout. `create` creates the bucket
(idempotent: an existing bucket gets the template's settings again). Credentials and region come
from the usual AWS environment; local defaults (testing/testing, us-east-1) are filled in when
unset.

Exit status: 0 ok, 2 usage or template error, 1 AWS error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from queues_from_template import Resolver, load_template  # noqa: E402  (same directory)

DEFAULT_TEMPLATE = Path(__file__).resolve().parent.parent / "template.yaml"

# Bucket properties a local bucket does not need.
SKIPPED = {"Tags", "BucketName"}
# CloudFormation property -> the key of `bucket_definition`'s result (one S3 request each).
TRANSLATED = {
    "BucketEncryption": "Encryption",
    "PublicAccessBlockConfiguration": "PublicAccessBlock",
    "OwnershipControls": "OwnershipControls",
    "LifecycleConfiguration": "Lifecycle",
}


def _encryption_rule(rule: dict[str, Any]) -> dict[str, Any]:
    """One CloudFormation encryption rule in the S3 API's shape (its default is named
    ApplyServerSideEncryptionByDefault there)."""
    return {("ApplyServerSideEncryptionByDefault" if k == "ServerSideEncryptionByDefault" else k): v
            for k, v in rule.items()}


def _lifecycle_rule(rule: dict[str, Any], where: str) -> dict[str, Any]:
    """One CloudFormation lifecycle rule in the S3 API's shape."""
    out: dict[str, Any] = {}
    tags: list[dict[str, str]] = []
    for key, value in rule.items():
        if key == "Id":
            out["ID"] = value
        elif key == "Status":
            out["Status"] = value
        elif key == "ExpirationInDays":
            out["Expiration"] = {"Days": int(value)}
        elif key == "AbortIncompleteMultipartUpload":
            out["AbortIncompleteMultipartUpload"] = {"DaysAfterInitiation": int(value["DaysAfterInitiation"])}
        elif key == "TagFilters":
            tags = [{"Key": t["Key"], "Value": t["Value"]} for t in value]
        elif key == "Prefix":
            out["Filter"] = {"Prefix": value}
        else:
            raise ValueError(f"{where}.{key}: not translated by bucket_from_template.py; extend _lifecycle_rule()")
    if tags:
        if "Filter" in out:
            raise ValueError(f"{where}: Prefix together with TagFilters is not translated")
        out["Filter"] = {"Tag": tags[0]} if len(tags) == 1 else {"And": {"Tags": tags}}
    out.setdefault("Filter", {"Prefix": ""})
    return out


def bucket_definition(doc: dict[str, Any], resource: str = "BodyBucket") -> dict[str, Any]:
    """The S3 requests that give a local bucket the settings of `resource`: a dict of
    Encryption, PublicAccessBlock, OwnershipControls, Lifecycle (those the template sets)."""
    res = (doc.get("Resources") or {}).get(resource)
    if not isinstance(res, dict) or res.get("Type") != "AWS::S3::Bucket":
        raise ValueError(f"{resource} is not an AWS::S3::Bucket of the template")
    resolve = Resolver(doc)
    props = resolve(res.get("Properties") or {}, f"{resource}.Properties")
    out: dict[str, Any] = {}
    for key, value in props.items():
        where = f"{resource}.Properties.{key}"
        if key in SKIPPED:
            continue
        if key not in TRANSLATED:
            raise ValueError(f"{where}: not translated by bucket_from_template.py; extend bucket_definition()")
        if key == "BucketEncryption":
            value = {"Rules": [_encryption_rule(r) for r in value["ServerSideEncryptionConfiguration"]]}
        elif key == "LifecycleConfiguration":
            rules = value.get("Rules") or []
            value = {"Rules": [_lifecycle_rule(r, f"{where}.Rules[{i}]") for i, r in enumerate(rules)]}
        out[TRANSLATED[key]] = value
    return out


def create_bucket(defn: dict[str, Any], name: str, endpoint_url: str | None, region: str | None) -> bool:
    """Create the bucket (idempotent) and apply the template's settings. Returns True if created."""
    import boto3  # imported lazily: `print` must work without boto3

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    endpoint_url = endpoint_url or os.environ.get("AWS_ENDPOINT_URL") or None
    s3 = boto3.client("s3", endpoint_url=endpoint_url, region_name=region)
    created = False
    if name not in [b["Name"] for b in s3.list_buckets().get("Buckets", [])]:
        kwargs: dict[str, Any] = {"Bucket": name}
        if region != "us-east-1":
            kwargs["CreateBucketConfiguration"] = {"LocationConstraint": region}
        s3.create_bucket(**kwargs)
        created = True
    if "Encryption" in defn:
        s3.put_bucket_encryption(Bucket=name, ServerSideEncryptionConfiguration=defn["Encryption"])
    if "PublicAccessBlock" in defn:
        s3.put_public_access_block(Bucket=name, PublicAccessBlockConfiguration=defn["PublicAccessBlock"])
    if "OwnershipControls" in defn:
        s3.put_bucket_ownership_controls(Bucket=name, OwnershipControls=defn["OwnershipControls"])
    if "Lifecycle" in defn:
        s3.put_bucket_lifecycle_configuration(Bucket=name, LifecycleConfiguration=defn["Lifecycle"])
    return created


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("command", choices=["print", "create"],
                        help="print the S3 requests as JSON, or create the bucket with them (idempotent)")
    parser.add_argument("--template", type=Path, default=DEFAULT_TEMPLATE)
    parser.add_argument("--resource", default="BodyBucket", help="the bucket's logical id")
    parser.add_argument("--bucket-name", help="the local bucket's name (create)")
    parser.add_argument("--endpoint-url", help="default: $AWS_ENDPOINT_URL")
    parser.add_argument("--region", help="default: $AWS_REGION, $AWS_DEFAULT_REGION or us-east-1")
    args = parser.parse_args(argv)
    if args.command == "create" and not args.bucket_name:
        parser.error("create needs --bucket-name")
    try:
        defn = bucket_definition(load_template(args.template), args.resource)
        if args.command == "print":
            print(json.dumps(defn, indent=2, sort_keys=True))
            return 0
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"bucket_from_template: {exc}", file=sys.stderr)
        return 2
    try:
        created = create_bucket(defn, args.bucket_name, args.endpoint_url, args.region)
    except Exception as exc:  # botocore errors, connection refused
        print(f"bucket_from_template: cannot create bucket {args.bucket_name}: {exc}", file=sys.stderr)
        return 1
    state = "created" if created else "already exists"
    print(f"bucket {args.bucket_name}: {state}, settings from the template", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
