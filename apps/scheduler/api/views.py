"""The JSON face of the scheduler (DRF): the same request and reply as the XML face."""

from __future__ import annotations

import io
import logging

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework.exceptions import ParseError
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core import clock
from apps.core.api.schema import ERROR
from apps.projects.models import Project
from apps.protocol import ProtocolError, reply_to_dict, request_from_dict
from apps.scheduler.admission import BUSY_MESSAGE, busy_delay, scheduler_slot
from apps.scheduler.api.parsers import SchedulerJSONParser
from apps.scheduler.middleware import DATABASE_UNAVAILABLE
from apps.scheduler.services import scheduler_request_handle
from apps.scheduler.views import BodyRefused, read_body

logger = logging.getLogger(__name__)

EXAMPLE_REQUEST = {
    "authenticator": "0123456789abcdef0123456789abcdef",
    "hostid": 0,
    "rpc_seqno": 0,
    "platform_name": "x86_64-pc-linux-gnu",
    "work_req_seconds": 1.0,
    "cpu_req_secs": 1.0,
    "cpu_req_instances": 0.0,
    "host_info": {"p_ncpus": 4, "p_fpops": 3e9, "m_nbytes": 8e9, "d_free": 1e11, "host_cpid": "abc"},
}


class SchedulerJsonView(APIView):
    """POST a scheduler_request as JSON; get the scheduler_reply as JSON.

    Field names are BOINC's (see the XML protocol); the account key is inside the body,
    so the endpoint takes no other authentication. Every error is JSON: 413 for a body
    over COBBLESTONE_MAX_REQUEST_BYTES (the XML face's limit), 415 for a compressed one,
    400 for a bad one.
    """

    authentication_classes: list = []
    permission_classes = [AllowAny]
    parser_classes = [SchedulerJSONParser]

    @extend_schema(
        request=OpenApiTypes.OBJECT,
        responses={
            200: OpenApiTypes.OBJECT,
            400: OpenApiResponse(ERROR, description="Not JSON, not an object, or not a scheduler request"),
            404: OpenApiResponse(ERROR, description="No project at this URL"),
            413: OpenApiResponse(ERROR, description="Body over COBBLESTONE_MAX_REQUEST_BYTES"),
            415: OpenApiResponse(ERROR, description="Compressed body"),
            503: OpenApiResponse(
                ERROR,
                description="The request failed, the project is down or the server is busy: "
                "try again after Retry-After seconds",
            ),
        },
        examples=[OpenApiExample("First request of a new host", value=EXAMPLE_REQUEST, request_only=True)],
        summary="Scheduler RPC (JSON)",
    )
    def post(self, request: Request, slug: str) -> Response:
        # Read as the XML face reads, not through request.data: Django's own size check
        # there answers with an HTML page, and at another limit.
        try:
            body = read_body(request._request, settings.COBBLESTONE_MAX_REQUEST_BYTES)
        except BodyRefused as refused:
            return Response({"error": refused.message}, status=refused.status)
        with scheduler_slot(request._request) as admitted:
            if not admitted:
                delay = busy_delay()
                busy = {"error": BUSY_MESSAGE, "request_delay": delay}
                return Response(busy, status=503, headers={"Retry-After": str(int(delay))})
            return self._answer(request, slug, body)

    def _answer(self, request: Request, slug: str, body: bytes) -> Response:
        """Parse, handle and reply to one admitted request."""
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            return Response({"error": "No project at this URL."}, status=404)
        try:
            data = SchedulerJSONParser().parse(io.BytesIO(body))
        except ParseError as exc:
            return Response({"error": str(exc.detail)}, status=400)
        if not isinstance(data, dict):
            return Response({"error": "the body must be a JSON object"}, status=400)
        try:
            req = request_from_dict(data)
        except ProtocolError as exc:
            return Response({"error": f"Bad scheduler request: {exc}"}, status=400)
        try:
            reply = scheduler_request_handle(
                project=project, req=req, now=clock.now(), remote_addr=request.META.get("REMOTE_ADDR", "")
            )
        except DATABASE_UNAVAILABLE:
            raise  # the middleware's "project is down" reply
        except Exception:
            logger.exception("scheduler %s (json): request failed", slug)
            return Response({"error": "Server error; please try again later."}, status=503)
        return Response(reply_to_dict(reply))
