"""Ships documents to sluice's http source with the official Elasticsearch
client, exactly as an application would ship to Elasticsearch.

Usage: es_bulk_client.py URL TOKEN COUNT
Prints one JSON line per step; exits non-zero on any unexpected failure.
"""
import json
import sys

from elasticsearch import Elasticsearch, helpers

url, token, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
# http_compress: bulk bodies are sent gzip-encoded; basic_auth carries the token as password.
es = Elasticsearch(url, basic_auth=("elastic", token), http_compress=True, request_timeout=60, max_retries=0)

info = es.info()
print(json.dumps({"step": "info", "version": info["version"]["number"], "tagline": info["tagline"]}), flush=True)


def docs():
    for i in range(count):
        d = {"_index": "logs-py", "_source": {"n": i, "msg": f"doc {i}", "nested": {"even": i % 2 == 0}}}
        if i % 100 == 0:
            d["_id"] = f"py-{i}"
        if i % 3 == 0:
            d["_op_type"] = "create"
        yield d


ok, errors = helpers.bulk(es, docs(), chunk_size=300)
print(json.dumps({"step": "bulk", "ok": ok, "errors": errors}), flush=True)

# A source line that is not a JSON object: the client must be told (per-item 400).
ok, errors = helpers.bulk(es, ["not a json object"], index="logs-py", raise_on_error=False)
statuses = [next(iter(e.values()))["status"] for e in errors]
print(json.dumps({"step": "bad", "ok": ok, "statuses": statuses}), flush=True)
