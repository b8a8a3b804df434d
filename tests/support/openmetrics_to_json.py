"""Parse an OpenMetrics file with the Prometheus project's own parsers and
print its families as JSON for tests/fast/openmetrics.rs.

Usage: openmetrics_to_json.py FILE

The OpenMetrics parser is strict (``# EOF``, units as name suffixes, one
series per label set); the file must also read as the Prometheus text
format 0.0.4, which node_exporter's textfile collector parses. Either
parser's error fails the script with its message.
"""

import json
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families
from prometheus_client.parser import \
    text_string_to_metric_families as prometheus_text_families

text = open(sys.argv[1], encoding='utf-8').read()
families = [
    {
        'name': f.name,
        'type': f.type,
        'unit': f.unit,
        'samples': [{'name': s.name, 'labels': s.labels, 'value': s.value}
                    for s in f.samples],
    }
    for f in text_string_to_metric_families(text)
]
# The textfile collector's format: a comment-only `# EOF` and `# UNIT`.
prometheus = sum(len(f.samples) for f in prometheus_text_families(text))
print(json.dumps({'families': families, 'prometheus_samples': prometheus}))
