# Generated fixture: the structure of meta-llama/llama example_text_completion.py (run with
# `torchrun --nproc_per_node 1 example_text_completion.py ...`, as its README says).
import fire

from llama import Llama


def main(ckpt_dir: str, tokenizer_path: str, max_seq_len: int = 128, max_batch_size: int = 4):
    generator = Llama.build(ckpt_dir=ckpt_dir, max_seq_len=max_seq_len, max_batch_size=max_batch_size)
    return generator


if __name__ == "__main__":
    fire.Fire(main)
