"""scripts/bucket_from_template.py: the local body bucket's settings come from template.yaml's
BodyBucket, turned into the S3 API's requests; a setting it cannot translate is an error."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(SCRIPTS))

import bucket_from_template as bt  # noqa: E402
from queues_from_template import load_template  # noqa: E402

TEMPLATE = SCRIPTS.parent / "template.yaml"


def test_the_body_bucket_gets_the_templates_settings():
    doc = load_template(TEMPLATE)
    defn = bt.bucket_definition(doc)
    assert set(defn) == {"Encryption", "PublicAccessBlock", "OwnershipControls", "Lifecycle"}
    rule = defn["Encryption"]["Rules"][0]
    assert rule == {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
    assert all(defn["PublicAccessBlock"].values()) and len(defn["PublicAccessBlock"]) == 4
    rules = {r["ID"]: r for r in defn["Lifecycle"]["Rules"]}
    expiry = rules["expire-after-retention"]
    days = doc["Parameters"]["RetentionDays"]["Default"]
    assert expiry == {
        "ID": "expire-after-retention",
        "Status": "Enabled",
        "Filter": {"Tag": {"Key": "inbox-expiry", "Value": "retention"}},
        "Expiration": {"Days": days},
    }
    assert rules["abort-incomplete-uploads"]["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 1}
    assert rules["abort-incomplete-uploads"]["Filter"] == {"Prefix": ""}


def bucket(props: dict) -> dict:
    return {"Parameters": {"Days": {"Type": "Number", "Default": 9}},
            "Resources": {"B": {"Type": "AWS::S3::Bucket", "Properties": props}}}


def test_tags_and_the_name_are_skipped_and_refs_resolved():
    defn = bt.bucket_definition(bucket({
        "BucketName": "x", "Tags": [{"Key": "a", "Value": "b"}],
        "LifecycleConfiguration": {"Rules": [{"Status": "Enabled", "ExpirationInDays": {"Ref": "Days"},
                                              "TagFilters": [{"Key": "k", "Value": "1"}, {"Key": "j", "Value": "2"}]}]},
    }), "B")
    assert defn == {"Lifecycle": {"Rules": [{
        "Status": "Enabled", "Expiration": {"Days": 9},
        "Filter": {"And": {"Tags": [{"Key": "k", "Value": "1"}, {"Key": "j", "Value": "2"}]}},
    }]}}


@pytest.mark.parametrize(
    "props",
    [
        {"VersioningConfiguration": {"Status": "Enabled"}},                      # not translated
        {"LifecycleConfiguration": {"Rules": [{"Status": "Enabled", "Transitions": []}]}},
        {"LifecycleConfiguration": {"Rules": [{"Prefix": "a/", "TagFilters": [{"Key": "k", "Value": "v"}]}]}},
        {"BucketEncryption": {"Ref": "NoSuchParameter"}},
    ],
)
def test_a_setting_it_cannot_translate_is_an_error(props):
    with pytest.raises(ValueError):
        bt.bucket_definition(bucket(props), "B")


def test_only_a_bucket_is_derived():
    with pytest.raises(ValueError):
        bt.bucket_definition(load_template(TEMPLATE), "InboxTable")
    with pytest.raises(ValueError):
        bt.bucket_definition(load_template(TEMPLATE), "NoSuchResource")
