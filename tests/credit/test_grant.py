"""Granted credit from the claims of a job's valid instances (the design's and BOINC's rule)."""

from __future__ import annotations

import pytest

from apps.core.domain.resources import COBBLESTONE_SCALE
from apps.credit.domain import (
    SEED_POLICY,
    ClaimValue,
    CreditPolicy,
    GrantBasis,
    Rule,
    granted_credit,
    pegged_average,
)

EST = 1e12
BOUND = 1e15
BOINC = CreditPolicy(grant_rule=Rule.BOINC)


def grant(*claims, min_avg_pfc=0.0, policy=SEED_POLICY, bound=BOUND):
    return granted_credit(claims, fpops_est=EST, fpops_bound=bound, min_avg_pfc=min_avg_pfc, policy=policy)


def test_single_instance_is_granted_its_claim():
    g = grant(ClaimValue(pfc=3e12, approx=True))
    assert (g.credit, g.basis) == (3e12 * COBBLESTONE_SCALE, GrantBasis.CLAIMED)


def test_replicated_job_gets_mean_of_exact_claims():
    g = grant(ClaimValue(2e12, False), ClaimValue(4e12, False))
    assert (g.pfc, g.basis) == (3e12, GrantBasis.MEAN)


def test_replicated_job_ignores_approximate_claims():
    g = grant(ClaimValue(2e12, False), ClaimValue(9e12, True))
    assert g.pfc == 2e12


def test_replicated_job_with_only_approximate_claims_gets_min_avg_pfc_default():
    g = grant(ClaimValue(2e12, True), ClaimValue(9e12, True), min_avg_pfc=3.0)
    assert (g.credit, g.basis) == (3.0 * EST * COBBLESTONE_SCALE, GrantBasis.DEFAULT)


def test_replicated_job_with_only_approximate_claims_and_no_min_avg_pfc_gets_fpops_est():
    g = grant(ClaimValue(2e12, True), ClaimValue(9e12, True))
    assert g.credit == EST * COBBLESTONE_SCALE


def test_no_claims_is_an_error():
    with pytest.raises(ValueError, match="at least one"):
        grant()


def test_max_granted_credit_disregards_claims_above_it():
    policy = CreditPolicy(max_granted_credit=100.0)
    big = 1e3 / COBBLESTONE_SCALE
    g = grant(ClaimValue(2e12, False), ClaimValue(big, False), policy=policy)
    assert g.pfc == 2e12


def test_max_granted_credit_replaces_a_single_huge_claim_by_the_default():
    policy = CreditPolicy(max_granted_credit=100.0)
    g = grant(ClaimValue(1e3 / COBBLESTONE_SCALE, False), policy=policy)
    assert (g.pfc, g.basis) == (EST, GrantBasis.DEFAULT)


def test_max_granted_credit_caps_the_default_too():
    policy = CreditPolicy(max_granted_credit=1e-3)
    g = grant(ClaimValue(2e12, True), ClaimValue(2e12, True), policy=policy)
    assert g.credit == 1e-3


def test_pegged_average_of_one_value_is_that_value():
    assert pegged_average([5.0], anchor=1.0) == 5.0


def test_pegged_average_weights_values_near_the_anchor():
    # weights 1/(0.1+0) = 10 and 1/(0.1+9) = 1/9.1
    expected = (10 * 1.0 + 10.0 / 9.1) / (10 + 1 / 9.1)
    assert pegged_average([1.0, 10.0], anchor=1.0) == pytest.approx(expected, rel=1e-15)


def test_pegged_average_without_anchor_is_the_mean():
    assert pegged_average([1.0, 3.0], anchor=0.0) == 2.0


def test_boinc_rule_pegs_two_exact_claims_to_the_workunit_estimate():
    g = grant(ClaimValue(1e12, False), ClaimValue(1e13, False), policy=BOINC)
    assert g.pfc == pytest.approx(pegged_average([1e12, 1e13], EST), rel=1e-15)
    assert g.basis is GrantBasis.PEGGED


def test_boinc_rule_counts_a_single_exact_claim_twice():
    g = grant(ClaimValue(2e12, False), ClaimValue(5e12, True), policy=BOINC)
    assert g.pfc == pytest.approx(pegged_average([5e12, 2e12, 2e12], EST), rel=1e-15)


def test_boinc_rule_pegs_approximate_claims_when_none_is_exact():
    g = grant(ClaimValue(2e12, True), ClaimValue(5e12, True), policy=BOINC)
    assert g.pfc == pytest.approx(pegged_average([2e12, 5e12], EST), rel=1e-15)


def test_boinc_rule_caps_each_claim_at_fpops_bound():
    g = grant(ClaimValue(1e16, False), policy=BOINC)
    assert g.pfc == BOUND


def test_boinc_rule_with_every_claim_over_the_cap_grants_the_default():
    policy = CreditPolicy(grant_rule=Rule.BOINC, max_granted_credit=1e-3)
    g = grant(ClaimValue(2e12, False), ClaimValue(2e12, False), min_avg_pfc=3.0, policy=policy)
    assert g.basis is GrantBasis.DEFAULT
