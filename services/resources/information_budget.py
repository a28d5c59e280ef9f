"""What analyses may reveal (§5, docs/information-budget.md): the turn's and the session's budgets of analyses and
the threshold-search check, decided before a draft runs.

Each refusal is audited twice: a record in the gateway's store (shared by replicas, kept for review) and a
structured log line. Both carry the session, turn, a fingerprint (of the searched target for ORACLE_PATTERN, of the
draft's shape otherwise) and the count, never a literal of the draft or a value of a row.
"""

from __future__ import annotations

import logging

from services.resources.config import ResourcesSettings
from services.resources.draft import Draft
from services.resources.ports import Admission, AnalysisAdmissions, AnalysisLimits, AnalysisRefusal, Search
from services.resources.shapes import shape_of
from shared.rpc.next_steps import metadata
from shared.rpc.refusals import Denied, Exhausted, Refusal

logger = logging.getLogger("tessera.resources.audit")


class InformationBudget:
    def __init__(self, store: AnalysisAdmissions, settings: ResourcesSettings) -> None:
        self._store = store
        self.limits = AnalysisLimits(settings.analyses_per_turn, settings.analyses_per_session,
                                     settings.oracle_variants_per_shape, settings.oracle_searches_per_session)
        self._period_hours = settings.session_budget_lifetime_seconds / 3600

    def admit(self, session_id: str, turn_id: str, draft: Draft) -> Admission:
        """Take one analysis of the budgets, or refuse it (ANALYSIS_BUDGET_SPENT, ORACLE_PATTERN), audited."""
        shape = shape_of(draft)
        search = Search(shape.targets, shape.variant, shape.asked) if shape.oracle_prone else None
        admission = self._store.admit(session_id, turn_id, shape.fingerprint, search, self.limits)
        if admission.refused is not None:
            self._audit(admission.refused)
            raise self._refusal(admission.refused)
        return admission

    def release(self, session_id: str, turn_id: str) -> None:
        """An analysis that did not run does not count (nothing was learnt from it)."""
        self._store.release(session_id, turn_id)

    def session_remaining(self, session_id: str) -> int:
        return max(0, self.limits.per_session - self._store.session_used(session_id))

    def remaining_after(self, admission: Admission) -> tuple[int, int]:
        """(turn, session) analyses left after an admitted one."""
        return (max(0, self.limits.per_turn - admission.turn_used),
                max(0, self.limits.per_session - admission.session_used))

    @staticmethod
    def _audit(refused: AnalysisRefusal) -> None:
        logger.warning("analysis refused: %s (%s bound)", refused.reason, refused.budget, extra={"fields": {
            "event": "analysis-refused", "reason": refused.reason, "budget": refused.budget,
            "session_id": refused.session_id, "turn_id": refused.turn_id, "shape": refused.shape,
            "count": refused.count, "bound": refused.bound}})

    def _refusal(self, refused: AnalysisRefusal) -> Refusal:
        bound, budget = refused.bound, refused.budget
        if refused.reason == "ANALYSIS_BUDGET_SPENT":
            if budget == "turn":
                return Exhausted("ANALYSIS_BUDGET_SPENT",
                                 f"at most {bound} analyses per turn", metadata(bound=bound, budget=budget))
            return Exhausted(
                "ANALYSIS_BUDGET_SPENT",
                f"at most {bound} analyses per session (renewed {self._period_hours:g} h after the session's "
                f"first analysis)", metadata(bound=bound, budget=budget, next_step=(
                    "No analyses are left in this session: present what you have with present_ui, or answer, and "
                    "tell the person that more questions need a new session or a later time.")))
        # PERMISSION_DENIED, not RESOURCE_EXHAUSTED: this is a refusal of what the draft would reveal, and asking
        # again (or later in the same session) is refused alike; it is no quota to wait for.
        what = (f"this draft compares the same hidden value as earlier drafts of this session with other bounds or "
                f"conditions; {refused.count} such variants were answered and at most {bound} are"
                ) if budget == "target" else (
                f"this session has asked {refused.count} drafts whose rows depend on values it is never shown, "
                f"each with other bounds; at most {bound} are answered")
        return Denied("ORACLE_PATTERN",
                      f"{what}: a search that narrows a hidden value is not answered",
                      metadata(bound=bound, budget=budget, shape=refused.shape))
