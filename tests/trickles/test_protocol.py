"""Trickle-ups on the wire: a body that is not XML is set aside, the request still read."""

from __future__ import annotations

from apps.protocol import parse_request, trickle_down_body, trickle_number

REQUEST = b"""<scheduler_request>
    <authenticator>k</authenticator>
  <msg_from_host>
      <result_name>job1_0</result_name>
      <time>1763750880</time>
<variety>progress</variety>
%s
  </msg_from_host>
  <msg_from_host>
      <result_name>job2_0</result_name>
      <time>1763750881</time>
<variety>progress</variety>
<runtime>60</runtime>
  </msg_from_host>
</scheduler_request>
"""


def test_a_body_that_is_not_xml_is_set_aside_with_its_name_time_and_reason():
    request = parse_request(REQUEST % b"done: 3 < 4 & <open>", max_bytes=100_000)

    bad, good = request.trickle_ups
    assert (bad.result_name, bad.time, bad.body) == ("job1_0", 1763750880, "")
    assert bad.problem.startswith("malformed XML")
    assert (good.variety, good.problem) == ("progress", "")
    assert trickle_number(good.body, "runtime") == 60


def test_well_formed_bodies_are_read_as_they_are():
    request = parse_request(REQUEST % b"<step>1</step>", max_bytes=100_000)

    assert [t.problem for t in request.trickle_ups] == ["", ""]
    assert request.trickle_ups[0].body == "<variety>progress</variety>\n<step>1</step>"


def test_a_trickle_down_body_starts_with_its_variety():
    assert trickle_down_body("a&b", " <x>1</x> ") == "<variety>a&amp;b</variety>\n<x>1</x>"
