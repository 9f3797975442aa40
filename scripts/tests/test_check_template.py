"""scripts/check_template.py's read check on hand-made CloudFormation: every role that reads the
table is on LEADING_READS and reads with exactly its prefixes and actions; a Scan only where
ALLOWED_SCANS says, in a statement of its own. (tests/it/template.rs runs the whole check on
template.yaml and compares the lists with the code's.)"""

from __future__ import annotations

import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(SCRIPTS))

import check_template as ct  # noqa: E402

TABLE = {"Fn::GetAtt": ["InboxTable", "Arn"]}
INDEX = {"Fn::Sub": "${InboxTable.Arn}/index/open-index"}


def statement(sid, actions, resource, keys=None):
    s = {"Sid": sid, "Effect": "Allow", "Action": actions, "Resource": resource}
    if keys is not None:
        s["Condition"] = {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": keys}}
    return s


def cfn(role, *statements):
    return {
        "Resources": {
            role: {
                "Type": "AWS::IAM::Role",
                "Properties": {
                    "Policies": [{"PolicyDocument": {"Statement": list(statements)}}]
                },
            }
        }
    }


def reaper(get_keys=("MSG#*",), index_keys=("OPEN#*",), get=("dynamodb:GetItem",)):
    return cfn(
        "ReaperRole",
        statement("Index", ["dynamodb:Query"], INDEX, list(index_keys)),
        statement("Get", list(get), TABLE, list(get_keys)),
        statement("Count", ["dynamodb:UpdateItem"], TABLE),
    )


def test_a_role_reading_exactly_its_prefixes_passes():
    assert ct.check_leading_reads(reaper()) == []
    assert ct.leading_reads(reaper(), "ReaperRole") == ["MSG#*", "index:OPEN#*"]


def test_a_wider_or_missing_read_fails():
    assert "expected exactly" in "".join(ct.check_leading_reads(reaper(get_keys=("*",))))
    missing = ct.check_leading_reads(reaper(get=("dynamodb:Query",)))
    assert any("missing dynamodb:GetItem" in p for p in missing), missing


def test_a_read_without_a_condition_or_a_read_list_fails():
    unconditioned = cfn("ReaperRole", statement("Get", ["dynamodb:GetItem"], TABLE))
    assert any("may read any item" in p for p in ct.check_leading_reads(unconditioned))
    ingest = cfn("IngestRole", statement("Put", ["dynamodb:PutItem", "dynamodb:GetItem"], TABLE))
    assert any("has no read list" in p for p in ct.check_leading_reads(ingest))


def test_a_scan_only_where_allowed_and_alone():
    reconcile = ct.LEADING_READS["ReconcileRole"]
    ok = cfn(
        "ReconcileRole",
        statement("Read", ["dynamodb:GetItem", "dynamodb:Query"], TABLE, reconcile["table"]),
        statement("Scan", ["dynamodb:Scan"], TABLE),
        statement("Unmatched", ["dynamodb:Query"], INDEX, reconcile["index"]),
    )
    assert ct.check_leading_reads(ok) == []
    mixed = cfn(
        "ReconcileRole",
        statement("Read", ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:Scan"], TABLE, reconcile["table"]),
        statement("Unmatched", ["dynamodb:Query"], INDEX, reconcile["index"]),
    )
    assert any("statement of its own" in p for p in ct.check_leading_reads(mixed))
    scan = cfn("ReaperRole", statement("Scan", ["dynamodb:Scan"], TABLE))
    assert any("reads every item" in p for p in ct.check_leading_reads(scan))


def test_the_stream_is_not_the_table():
    stream = {"Fn::Sub": "${InboxTable.Arn}/stream/*"}
    only_stream = cfn("IngestRole", statement("Stream", ["dynamodb:GetRecords"], stream))
    assert ct.check_leading_reads(only_stream) == []
