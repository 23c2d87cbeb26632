#!/usr/bin/env python3
"""An independent client of the documented contract (../shared/spec/interface.md and
contract-details.md), written against the documents rather than the service's code.
Usage: client.py BASE_URL API_KEY. Exits non-zero on the first broken expectation and prints
one line per check."""
import json
import sys
import urllib.error
import urllib.request

BASE, KEY = sys.argv[1].rstrip("/"), sys.argv[2]
checks = 0


def call(method, path, body=None, token=KEY, json_header=False):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data=data, method=method)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    if data is not None or json_header:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=10) as res:
            raw = res.read()
            return res.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        raw = e.read()
        return e.code, json.loads(raw) if raw else None


def expect(cond, what):
    global checks
    checks += 1
    if not cond:
        print(f"FAIL {what}")
        sys.exit(1)
    print(f"ok {what}")


def is_error(body, status):
    return isinstance(body, dict) and body.get("status") == status and isinstance(body.get("message"), str)


# Health and topics
s, b = call("GET", "/healthz", token=None)
expect(s == 200 and b["status"] == "healthy", "GET /healthz answers without auth")
s, b = call("GET", "/api/v1/topics")
expect(s == 200 and isinstance(b, list) and all(isinstance(t, str) for t in b), "GET /api/v1/topics is a list of strings")

# Tenants: idempotent PUT in both path forms
s, b = call("PUT", "/api/v1/contract-co")
expect(s == 201 and b["id"] == "contract-co" and b["destinations_count"] == 0 and b["topics"] == [], "PUT /:tenant_id creates (201)")
s, b = call("PUT", "/api/v1/tenants/contract-co")
expect(s == 200 and b["id"] == "contract-co", "PUT /tenants/{id} again answers 200")
s, b = call("GET", "/api/v1/contract-co")
expect(s == 200 and "created_at" in b, "GET tenant")
s, b = call("PUT", "/api/v1/tenants/sdk-co", json_header=True)
expect(s == 201 and b["id"] == "sdk-co", "PUT with Content-Type: application/json and no body creates (as SDKs send it)")
s, b = call("DELETE", "/api/v1/tenants/sdk-co", json_header=True)
expect(s == 200 and b == {"success": True}, "DELETE with Content-Type: application/json and no body")
s, b = call("PUT", "/api/v1/tenants/publish")
expect(s == 422 and is_error(b, 422), "a tenant id colliding with a fixed path is refused")
s, b = call("GET", "/api/v1/tenants/nobody-here")
expect(s == 404 and is_error(b, 404), "unknown tenant is 404 in the error shape")
s, b = call("GET", "/api/v1/contract-co", token="wrong")
expect(s == 401 and is_error(b, 401), "a wrong credential is 401")

# Destination types
s, b = call("GET", "/api/v1/destination-types")
types = [t["type"] for t in b]
expect(s == 200 and types == ["webhook", "sqs", "rabbitmq", "gateway", "kinesis", "servicebus", "s3", "pubsub", "kafka"], "the eight destination types of the interface, then kafka")
s, b = call("GET", "/api/v1/destination-types/webhook")
url_field = next(f for f in b["config_fields"] if f["key"] == "url")
expect(url_field["required"] is True and "validation" in url_field and b["icon"].startswith("<svg"), "webhook schema: url field with validation, SVG icon")

# Destinations
s, d = call("POST", "/api/v1/tenants/contract-co/destinations", {"type": "webhook", "topics": "*", "config": {"url": "https://example.com/hook"}})
expect(s == 201 and d["type"] == "webhook" and d["disabled_at"] is None and d["credentials"]["secret"], "create webhook: 201, enabled, secret generated and readable")
did = d["id"]
s, b = call("POST", "/api/v1/contract-co/destinations", {"type": "sqs", "topics": "*", "config": {}, "credentials": {}})
expect(s == 422 and is_error(b, 422) and isinstance(b.get("data"), list) and len(b["data"]) >= 3, "invalid create: 422 listing every problem")
s, b = call("POST", "/api/v1/contract-co/destinations", {"type": "sqs", "topics": "*", "config": {"queue_url": "https://sqs.example.com/q"}, "credentials": {"key": "AKIA", "secret": "supersecretvalue"}})
expect(s == 201 and b["credentials"]["secret"] != "supersecretvalue" and b["credentials"]["secret"].endswith("*"), "sqs secret is masked")
s, b = call("GET", "/api/v1/tenants/contract-co/destinations?type=sqs")
expect(s == 200 and [x["type"] for x in b] == ["sqs"], "list filtered by type")
s, b = call("PATCH", f"/api/v1/tenants/contract-co/destinations/{did}", {"metadata": {"name": "main"}, "config": {"url": "https://example.com/v2"}})
expect(s == 200 and b["config"]["url"] == "https://example.com/v2" and b["metadata"] == {"name": "main"}, "PATCH merges")
s, b = call("PATCH", f"/api/v1/tenants/contract-co/destinations/{did}", {"metadata": None})
expect(s == 200 and "metadata" not in b, "PATCH {metadata: null} removes it (RFC 7396)")
s, b = call("POST", "/api/v1/contract-co/destinations", {"type": "pigeon", "topics": "*"})
expect(s == 422 and all(isinstance(x, str) for x in b["data"]) and b["data"][0].startswith("body.type must be one of"), "422 data: human-readable strings")
s, b = call("POST", "/api/v1/contract-co/destinations", {"type": "aws_sqs", "topics": "*", "config": {"queue_url": "https://sqs.example.com/q2"}, "credentials": {"key": "AKIA", "secret": "supersecretvalue"}})
expect(s == 201 and b["type"] == "sqs", "type alias aws_sqs accepted, answered as sqs")
call("DELETE", f"/api/v1/contract-co/destinations/{b['id']}")
s, b = call("PUT", f"/api/v1/tenants/contract-co/destinations/{did}/disable")
expect(s == 200 and b["disabled_at"], "disable sets disabled_at")
s, b = call("PUT", f"/api/v1/contract-co/destinations/{did}/enable")
expect(s == 200 and b["disabled_at"] is None, "enable clears it (first form)")
s, b = call("GET", f"/api/v1/contract-co/destinations/{did}")
expect(s == 200 and b["id"] == did, "GET destination (first form)")

# Tenant token
s, b = call("GET", "/api/v1/contract-co/token")
expect(s == 200 and b["tenant_id"] == "contract-co" and b["token"].count(".") == 2, "token is a JWT for the tenant")
tok = b["token"]
s, b = call("GET", "/api/v1/tenants/contract-co/destinations", token=tok)
expect(s == 200 and len(b) == 2, "the token reads its own tenant")
s, b = call("GET", "/api/v1/destinations", token=tok)
expect(s == 200 and len(b) == 2, "with a token the tenant segment may be left out")
call("PUT", "/api/v1/contract-other")
s, b = call("GET", "/api/v1/tenants/contract-other", token=tok)
expect(s == 403 and is_error(b, 403), "another tenant is 403")
s, b = call("GET", "/api/v1/contract-co/token", token=tok)
expect(s == 403, "an admin-only route is 403 for a token")
s, b = call("GET", "/api/v1/contract-co/portal?theme=dark")
expect(s == 200 and "token=" in b["redirect_url"] and b["tenant_id"] == "contract-co", "portal redirect URL carries a token")

# Publish
s, b = call("POST", "/api/v1/publish", {"tenant_id": "contract-co", "topic": "user.created", "eligible_for_retry": True, "data": {"a": 1}})
expect(s == 202 and isinstance(b["id"], str) and b["duplicate"] is False and did in b["destination_ids"], "publish: 202 {id, duplicate, destination_ids}")
s, b = call("POST", "/api/v1/publish", {"tenant_id": "contract-co", "topic": "user.created", "id": "contract-evt-1", "data": {"a": 1}})
s2, b2 = call("POST", "/api/v1/publish", {"tenant_id": "contract-co", "topic": "user.created", "id": "contract-evt-1", "data": {"a": 1}})
expect(s == 202 and s2 in (202, 409) and (s2 == 409 or b2["duplicate"] is True), "a repeated id is a duplicate (or 409 while racing)")
s, b = call("POST", "/api/v1/publish", {"tenant_id": "contract-co", "topic": "user.created", "data": [1]})
expect(s == 422 and is_error(b, 422), "data must be an object")

# Attempts listing envelope
s, b = call("GET", f"/api/v1/tenants/contract-co/destinations/{did}/attempts")
expect(s == 200 and isinstance(b["models"], list) and set(b["pagination"]) >= {"order_by", "dir", "limit", "next", "prev"}, "attempt list envelope")

# Deletion
s, b = call("DELETE", f"/api/v1/tenants/contract-co/destinations/{did}")
expect(s == 200 and b == {"success": True}, "DELETE destination")
s, b = call("DELETE", "/api/v1/contract-co")
expect(s == 200 and b == {"success": True}, "DELETE tenant")
s, b = call("GET", "/api/v1/tenants/contract-co/destinations")
expect(s == 404, "its destinations went with it")

print(f"{checks} checks passed")
