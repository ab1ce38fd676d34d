"""bourse's x402 Bazaar documents as the official x402 Python SDK reads them.

Usage: python bazaar.py BASE_URL LISTING_ID WORD

Against a running bourse with the x402 rail configured and LISTING_ID a paid listing whose title
holds WORD: the 402 of its purchase (`PAYMENT-REQUIRED`, decoded by the SDK), its Bazaar
extension (parsed, validated against its own schema and the Bazaar spec, and extracted as a
facilitator would from a payment echoing it), and `GET /discovery/resources` and
`GET /discovery/search` through the SDK's Bazaar facilitator client. Prints one line per check
and exits non-zero at the first failure (run by tests/it/discovery.rs).
"""

import json
import sys
import urllib.error
import urllib.request

from x402.extensions.bazaar import (
    BodyDiscoveryExtension,
    ListDiscoveryResourcesParams,
    SearchDiscoveryResourcesParams,
    extract_discovery_info,
    validate_discovery_extension,
    validate_discovery_extension_spec,
    with_bazaar,
)
from x402.extensions.bazaar.types import parse_discovery_extension
from x402.http import FacilitatorConfig, HTTPFacilitatorClientSync
from x402.http.utils import decode_payment_required_header
from x402.schemas import PaymentRequired


def check(condition, what):
    if not condition:
        print(f"FAIL {what}")
        sys.exit(1)
    print(f"ok {what}")


def main():
    base, listing, word = sys.argv[1], sys.argv[2], sys.argv[3]
    purchase = f"{base}/api/marketplace/listings/{listing}/purchase"

    # The 402, as a buyer without a key meets it.
    request = urllib.request.Request(
        purchase, data=b"{}", method="POST", headers={"content-type": "application/json"}
    )
    try:
        urllib.request.urlopen(request)
        check(False, "the purchase answers 402")
    except urllib.error.HTTPError as error:
        check(error.code == 402, "the purchase answers 402")
        header = error.headers["PAYMENT-REQUIRED"]
        body = json.loads(error.read())
    required = decode_payment_required_header(header)
    check(isinstance(required, PaymentRequired), "PAYMENT-REQUIRED decodes as a v2 PaymentRequired")
    check(required.resource.url == purchase, "its resource is the purchase URL")
    check(required.resource.service_name, "its resource names a serviceName")
    check(required.resource.tags, "its resource has tags")
    raw = required.extensions["bazaar"]
    extension = parse_discovery_extension(raw)
    check(isinstance(extension, BodyDiscoveryExtension), "extensions.bazaar parses as a body-method extension")
    check(extension.info.input.method == "POST", "the call is a POST")
    check(extension.info.input.body_type == "json", "with a JSON body")
    result = validate_discovery_extension(extension)
    check(result.valid, f"info validates against the extension's schema {result.errors}")
    result = validate_discovery_extension_spec(raw)
    check(result.valid, f"the extension follows the Bazaar spec {result.errors}")
    check(body["extensions"]["bazaar"] == raw, "the v1 body carries the same extension")

    # A facilitator cataloguing a payment that echoes the 402's extensions, as clients do.
    accepted = required.accepts[0].model_dump(by_alias=True, exclude_none=True)
    payload = {
        "x402Version": 2,
        "resource": required.resource.model_dump(by_alias=True, exclude_none=True),
        "accepted": accepted,
        "payload": {},
        "extensions": required.extensions,
    }
    found = extract_discovery_info(payload, accepted)
    check(found is not None, "a facilitator extracts the discovery info")
    check(found.method == "POST", "with the method")
    check(found.resource_url == purchase, "and the resource")
    check(found.service_name == required.resource.service_name, "the serviceName survives sanitizing")
    check(found.tags == required.resource.tags, "the tags survive sanitizing")

    # Discovery through the SDK's facilitator client.
    client = with_bazaar(HTTPFacilitatorClientSync(FacilitatorConfig(url=base)))
    listed = client.extensions.bazaar.list_resources(ListDiscoveryResourcesParams(limit=50))
    check(listed.x402_version == 2, "the list answer is x402 v2")
    check(listed.pagination.total >= 1, "the list counts the paid listings")
    mine = [item for item in listed.items if item.resource == purchase]
    check(len(mine) == 1, "the list holds the listing")
    item = mine[0]
    check(item.accepts == [accepted], "its accepts are the 402's")
    check(item.type == "http" and item.last_updated, "it is an http resource with lastUpdated")
    listed_ext = parse_discovery_extension(item.extensions["bazaar"])
    check(validate_discovery_extension(listed_ext).valid, "its Bazaar extension validates")
    check("ratingCount" in item.extensions["bourse"], "bourse's trust signals ride along")
    filtered = client.extensions.bazaar.list_resources(
        ListDiscoveryResourcesParams(network="eip155:84532", limit=50)
    )
    check(filtered.items == [] and filtered.pagination.total == 0, "a network filter is applied")

    searched = client.extensions.bazaar.search(SearchDiscoveryResourcesParams(query=word, limit=5))
    check(searched.x402_version == 2, "the search answer is x402 v2")
    check(any(r.resource == purchase for r in searched.resources), "search finds the listing by a title word")
    check(searched.partial_results is False, "search says its results are whole")
    check(searched.pagination is not None and searched.pagination.limit == 5, "search pages")
    print("all checks passed")


if __name__ == "__main__":
    main()
