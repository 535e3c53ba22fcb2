"""The operator matcher: name spellings and limiting configurations, one small case each."""

from __future__ import annotations

import pytest

from silica.scan.classify import NodeFacts, classify
from silica.scan.knowledge import knowledge

CASES = [
    # (facts, status, matched, condition)
    (NodeFacts("aten::mm", ("float32", "float32")), "supported", "aten::mm", ""),
    # no integer datapath on the TensorEngine (NCC_EVRF035)
    (NodeFacts("aten::mm", ("int32", "int32")), "limited", "aten::mm [int_operands]", "int_operands"),
    # the functional spelling torch.export emits is found through its base name
    (NodeFacts("aten::view"), "supported", "aten::view", ""),
    (NodeFacts("aten::split_with_sizes"), "supported", "aten::split_with_sizes_copy", ""),
    # overload-specific rows win over the base name
    (NodeFacts("aten::mul.Tensor", ("float32",)), "supported", "aten::mul.Tensor", ""),
    # a boolean mask makes aten::index data-dependent in shape
    (
        NodeFacts("aten::index.Tensor", ("float32",), ("bool",)),
        "limited",
        "aten::index.Tensor [bool_index]",
        "bool_index",
    ),
    (NodeFacts("aten::index.Tensor", ("float32",), ("int64",)), "supported", "aten::index.Tensor", ""),
    # TopK on integers is rejected (NCC_EVRF013)
    (NodeFacts("aten::topk", ("int64",)), "limited", "aten::topk [int_operands]", "int_operands"),
    # transposed conv with stride and dilation: input + kernel dilation (NCC_EVRF010)
    (
        NodeFacts(
            "aten::convolution",
            ("float32",),
            params={"transposed": True, "stride": [2, 2], "dilation": [2, 2]},
        ),
        "limited",
        "aten::convolution [conv_input_dilation]",
        "conv_input_dilation",
    ),
    (
        NodeFacts(
            "aten::convolution",
            ("float32",),
            params={"transposed": False, "stride": [2, 2], "dilation": [1, 1]},
        ),
        "supported",
        "aten::convolution",
        "",
    ),
    (
        NodeFacts("aten::max_pool2d_with_indices", ("float32",), params={"dilation": [2, 2]}),
        "limited",
        "aten::max_pool2d_with_indices [pool_dilation]",
        "pool_dilation",
    ),
    # documented unsupported ops
    (NodeFacts("aten::histc", ("float32",)), "unsupported", "aten::histc", ""),
    (NodeFacts("aten::_fft_r2c", ("float32",)), "unsupported", "aten::_fft_r2c", ""),
    # composite factory ops torch.export leaves in place
    (NodeFacts("aten::scalar_tensor"), "supported", "aten::scalar_tensor", ""),
    # bookkeeping nodes are not operators
    (NodeFacts("aten::_assert_tensor_metadata"), "ignored", "aten::_assert_tensor_metadata", ""),
    # no lowering anywhere: likely unsupported (reference notes section 7, rule 2)
    (NodeFacts("aten::definitely_not_an_op"), "unsupported", "", ""),
    # a custom C++/CUDA op namespace
    (
        NodeFacts("mylib::fused_rope", ("float32",)),
        "unsupported",
        "pattern:custom_cuda_or_cpp_op (torch.ops.<ns>.*)",
        "",
    ),
    (NodeFacts("torchvision::nms", ("float32",)), "unsupported", "torchvision::nms", ""),
]


@pytest.mark.parametrize(("facts", "status", "matched", "condition"), CASES)
def test_classify(facts: NodeFacts, status: str, matched: str, condition: str) -> None:
    got = classify(facts, knowledge())
    assert (got.status, got.matched, got.condition) == (status, matched, condition)
    assert got.source


def test_unknown_op_says_why() -> None:
    got = classify(NodeFacts("aten::definitely_not_an_op"), knowledge())
    assert "torch-xla" in got.note and "PartitionerConfig" in got.note
