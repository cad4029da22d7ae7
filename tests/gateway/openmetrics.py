"""The gateway's `/metrics`, read by the Prometheus project's own parser: `prometheus_client`'s
strict OpenMetrics one (`openmetrics.parser.text_string_to_metric_families`), which refuses
text a scraper would refuse (no `# EOF`, a sample outside its family, a bad escape, a counter
without `_total`, a histogram whose buckets do not add up...).

    python openmetrics.py SCRAPED.txt

Prints one JSON object, on its last line,: `families` (each family's name to its type, unit and help) and
`samples` (each sample's name, labels and value), in the text's order. Exits 1 with the
parser's error on stderr when the text is not valid OpenMetrics.
"""

import json
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families


def main():
    with open(sys.argv[1], encoding="utf-8") as scraped:
        text = scraped.read()
    families = {}
    samples = []
    try:
        for family in text_string_to_metric_families(text):
            families[family.name] = {
                "type": family.type,
                "unit": family.unit,
                "help": family.documentation,
            }
            for sample in family.samples:
                samples.append({
                    "name": sample.name,
                    "labels": sample.labels,
                    "value": sample.value,
                })
    except ValueError as error:
        print(f"openmetrics: not valid OpenMetrics: {error}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps({"families": families, "samples": samples}))


if __name__ == "__main__":
    main()
