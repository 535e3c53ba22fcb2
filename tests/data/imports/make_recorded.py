"""Write the two constructed recorded files (see README.md). Run from the repository root:

python tests/data/imports/make_recorded.py
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def get_products() -> None:
    offer = json.loads((HERE.parent / "offer_sample.json").read_text(encoding="utf-8"))
    items = []
    for sku, product in offer["products"].items():
        terms = {
            kind: {k: v for k, v in offer["terms"].get(kind, {}).get(sku, {}).items()}
            for kind in ("OnDemand", "Reserved")
        }
        item = {
            "product": product,
            "serviceCode": "AmazonEC2",
            "terms": terms,
            "version": offer["version"],
            "publicationDate": offer["publicationDate"],
        }
        items.append(json.dumps(item))
    half = len(items) // 2
    pages = [
        {"FormatVersion": "aws_v1", "PriceList": items[:half], "NextToken": "token-page-2"},
        {"FormatVersion": "aws_v1", "PriceList": items[half:]},
    ]
    (HERE / "get_products_ec2.json").write_text(
        "\n".join(json.dumps(p, indent=2) for p in pages) + "\n", encoding="utf-8"
    )


def describe_instance_types() -> None:
    def gpu(name: str, count: int, mib: int) -> dict[str, object]:
        return {
            "Gpus": [
                {"Name": name, "Manufacturer": "NVIDIA", "Count": count, "MemoryInfo": {"SizeInMiB": mib}}
            ],
            "TotalGpuMemoryInMiB": count * mib,
        }

    def neuron(name: str, count: int, cores: int, version: int, mib: int) -> dict[str, object]:
        return {
            "NeuronDevices": [
                {
                    "Name": name,
                    "Count": count,
                    "CoreInfo": {"Count": cores, "Version": version},
                    "MemoryInfo": {"SizeInMiB": mib},
                }
            ],
            "TotalNeuronDeviceMemoryInMiB": count * mib,
        }

    types = [
        {
            "InstanceType": "p5.48xlarge",
            "VCpuInfo": {"DefaultVCpus": 192},
            "MemoryInfo": {"SizeInMiB": 2048 * 1024},
            "GpuInfo": gpu("H100", 8, 81920),
        },
        {
            "InstanceType": "inf2.xlarge",
            "VCpuInfo": {"DefaultVCpus": 8},
            "MemoryInfo": {"SizeInMiB": 16 * 1024},
            "NeuronInfo": neuron("Inferentia2", 1, 2, 2, 32768),
        },
        {
            "InstanceType": "trn2.48xlarge",
            "VCpuInfo": {"DefaultVCpus": 192},
            "MemoryInfo": {"SizeInMiB": 2048 * 1024},
            "NeuronInfo": neuron("Trainium2", 16, 8, 3, 98304),
        },
        {
            "InstanceType": "g4dn.xlarge",
            "VCpuInfo": {"DefaultVCpus": 4},
            "MemoryInfo": {"SizeInMiB": 16 * 1024},
            "GpuInfo": gpu("T4", 1, 15360),
        },
        {"InstanceType": "m7i.large", "VCpuInfo": {"DefaultVCpus": 2}, "MemoryInfo": {"SizeInMiB": 8 * 1024}},
    ]
    (HERE / "describe_instance_types.json").write_text(
        json.dumps({"InstanceTypes": types}, indent=2) + "\n", encoding="utf-8"
    )


if __name__ == "__main__":
    get_products()
    describe_instance_types()
