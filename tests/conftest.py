"""Test tiers, in one place: which tests are `e2e` (start a real service) and which are `slow`.

Plain `pytest` runs neither (pyproject's addopts: `-m 'not slow and not e2e'`), which keeps the inner
loop near a minute on 2 cores; `pytest -m ""` (the README's test command, CI) runs every tier. A test
may also carry `@pytest.mark.slow` or `@pytest.mark.e2e` itself; the tables here cover whole files
and the tests that were measured slow (`pytest -m "" --durations=0`, 2026-12-03, 2 cores: each listed
test took over a second), so that no module needs editing to move between tiers.
"""

from __future__ import annotations

import pytest

# Whole files whose tests start a real service: uvicorn, Chromium, Prometheus, a model server, Ray,
# or a subprocess load test against a loopback server.
E2E_FILES = frozenset(
    {
        "tests/serve/test_api.py",
        "tests/serve/test_browser.py",
        "tests/serve/test_load.py",
        "tests/serve/test_bad_input.py",
        "tests/report/test_browser.py",
        "tests/pilot/test_end_to_end.py",
        "tests/pilot/test_store_and_stop.py",
        "tests/fleet/test_ray.py",
        "tests/monitor/test_prometheus.py",
        "tests/hostile/test_store_contention.py",
        "tests/pilot/test_load.py",  # paced load against loopback servers, timed in seconds
    }
)

# Whole files that are slow throughout: torch.export of every bundled architecture, the scan of a
# 10,000-file repository.
# 10,000-file repository, and the property-based parser fuzzing (hypothesis, hundreds of inputs each).
# The hostile campaign's case lists and per-layer property tests run every command as a user would,
# some thousand times: the slow tier, which CI runs in full.
SLOW_FILES = frozenset(
    {
        "tests/scan/test_model_scan.py",
        "tests/scan/test_speed.py",
        "tests/hostile/test_fuzz_parsers.py",
        "tests/hostile/test_bad_files.py",
        "tests/hostile/test_bad_args.py",
        "tests/hostile/test_layers.py",
        "tests/hostile/test_server.py",  # its real-server tests are marked e2e as well
        "tests/hostile/test_ranges.py",
        "tests/scan/test_corpus.py",  # scans every corpus repository (60+) and its held-out sets
    }
)

# Single tests (by name, parameters stripped) measured at over a second.
SLOW_TESTS = frozenset(
    {
        "test_leave_one_source_out_in_forked_workers_equals_the_serial_pass",
        "test_fit_recovers_known_parameters_from_synthetic_measurements",
        "test_model_scan_json",
        "test_config_json_near_misses",
        "test_inventory_near_misses",
        "test_price_file_near_misses",
        "test_systems_yaml",
        "test_piped_compare_is_tsv_csv_loads_and_80_columns_keep_money_whole",
        "test_piped_models_listing_is_tsv_and_csv_loads_in_pandas",
        "test_kit_carries_the_estimated_layout",
        "test_docs_monitor_block_is_up_to_date",
        "test_docs_real_vllm_block_is_up_to_date",
        "test_windows_are_stored_and_history_shows_them",
        "test_steady_production_windows_move_the_overlay",
        "test_production_30_percent_slower_is_flagged_in_its_window",
        "test_two_deployments_without_a_label_cannot_be_split",
        "test_sweep_runs_every_scenario_in_parallel_and_records_them_in_one_transaction",
        "test_sweep_tasks_carry_no_path_and_workers_read_no_file",
        "test_html_and_markdown_reports",
        "test_planner_table_in_docs_is_what_the_planner_finds_now",
        "test_first_bundled_trace_row_in_docs_is_what_the_simulator_finds_now",
        "test_killed_process_mid_write_loses_nothing_committed",
        "test_bad_input_is_one_line",
        "test_a_deployment_without_engine_metrics_is_named_not_zero",
        "test_over_provisioned_deployment_gets_a_right_size_with_the_saving",
        "test_8_concurrent_validate_out_to_one_path_all_succeed",
        "test_readme_compare_runs_without_the_optional_extras",
        "test_bad_price_files_are_one_clear_line",
        "test_quoted_tables_match_the_script",  # docs/simulate.md: the vLLM loopback tables re-scored
        "test_counter_resets_are_shown",
    }
)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = config.rootpath
    for item in items:
        path = item.path.relative_to(root).as_posix() if item.path.is_relative_to(root) else ""
        name = getattr(item, "originalname", item.name)
        if path in E2E_FILES or "postgresql" in item.name or "ray" in item.keywords:
            item.add_marker(pytest.mark.e2e)
        if path in SLOW_FILES or name in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
