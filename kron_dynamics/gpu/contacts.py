# Copyright 2026 kron_dynamics developers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
The contacts' kernels of one robot and one count m of contact rows (numba-cuda source).

M v' + h = S^T tau + J_c^T lambda with J_c v' + gamma = 0 (Pinocchio's ``constraintDynamics``,
the CPU's ``RobotModel.constrained_forward_dynamics``) and its inverse (the CPU's
``contact_inverse_dynamics``), per row: J_c and gamma are assembled from each contact's
generated Jacobian and classical acceleration (``contact_rows``: a 6-D contact's spatial
acceleration is the classical one less w x v_p), M and h come from the generated CRBA and
Newton-Euler kernels, and the solves here mirror the CPU's: a Cholesky factorization of M
(above ``codegen.UNROLLED_SOLVE`` coordinates M = L^T L along the tree), the contacts'
Delassus matrix A = J_c M^-1 J_c^T, and the minimum-norm least squares of NumPy's
``lstsq`` (singular values below rcond times the largest cut) by one-sided Jacobi rotations
(Hestenes), so that redundant contacts get the CPU's minimum-norm lambda.
"""

from .codegen import (_looped_substitution, _packed, _Robot, _tree_substitution,
                      factored_mass_matrix, solve_jacobian_columns, tree_descend,
                      tree_factored_mass_matrix, tree_tables)

# lstsq's cut-off of the CPU's contact solves (robot_model: rcond=1e-10)
CONTACT_RCOND = 1e-10


def _min_norm(rows: int, cols: int, indent: str = '    ') -> list:
    """
    Return lines: x = the minimum-norm least-squares solution of B x = b (NumPy's lstsq).

    B (rows x cols, row-major in the local array ``B``, overwritten) and b (``bv``, rows) are
    the kernel's; x goes to ``x`` (cols). One-sided Jacobi (Hestenes): columns p < p2 turned
    until every pair is orthogonal to rounding, the turns kept in ``W``; then the singular
    values are the columns' norms and x = sum over those above ``rcond`` times the largest of
    W[:, k] (B[:, k] . b) / s_k^2.
    """
    lines = [f'for ci in range({cols}):',
             f'    for cj in range({cols}):',
             f'        W[ci * {cols} + cj] = 1.0 if ci == cj else 0.0',
             'for sweep in range(60):',
             '    turned = 0',
             f'    for p in range({cols}):',
             f'        for p2 in range(p + 1, {cols}):',
             '            al = 0.0',
             '            be = 0.0',
             '            ga = 0.0',
             f'            for r in range({rows}):',
             f'                bp, bq = B[r * {cols} + p], B[r * {cols} + p2]',
             '                al += bp * bp',
             '                be += bq * bq',
             '                ga += bp * bq',
             '            if abs(ga) > 2.220446049250313e-16 * sqrt(al * be):',
             '                turned += 1',
             '                d = be - al                     # tan of the turn: the smaller root',
             '                if abs(d) < 1e100 * abs(ga):',
             '                    zeta = d / (2.0 * ga)',
             '                    tr = 1.0 / (abs(zeta) + sqrt(1.0 + zeta * zeta))',
             '                    tr = tr if zeta >= 0.0 else -tr',
             '                else:                           # 1 / (2 zeta), to rounding',
             '                    tr = ga / d',
             '                co = 1.0 / sqrt(1.0 + tr * tr)',
             '                si = co * tr',
             f'                for r in range({rows}):',
             f'                    bp, bq = B[r * {cols} + p], B[r * {cols} + p2]',
             f'                    B[r * {cols} + p] = co * bp - si * bq',
             f'                    B[r * {cols} + p2] = si * bp + co * bq',
             f'                for r in range({cols}):',
             f'                    bp, bq = W[r * {cols} + p], W[r * {cols} + p2]',
             f'                    W[r * {cols} + p] = co * bp - si * bq',
             f'                    W[r * {cols} + p2] = si * bp + co * bq',
             '    if turned == 0:',
             '        break',
             'top = 0.0',
             f'for k in range({cols}):',
             '    cs = 0.0',
             f'    for r in range({rows}):',
             f'        cs += B[r * {cols} + k] * B[r * {cols} + k]',
             '    sv[k] = cs',
             '    top = cs if cs > top else top',
             f'for k in range({cols}):',
             '    x[k] = 0.0',
             f'for k in range({cols}):',
             '    if sv[k] > rcond * rcond * top and sv[k] > 0.0:',
             '        cs = 0.0',
             f'        for r in range({rows}):',
             f'            cs += B[r * {cols} + k] * bv[r]',
             '        cs /= sv[k]',
             f'        for ci in range({cols}):',
             f'            x[ci] += W[ci * {cols} + k] * cs']
    return [indent + line for line in lines]


def _rows_kernel() -> list:
    """
    Return ``contact_rows(J6, A6, V, row0, dim, drift, JC, GC, BAD)``: one contact's rows.

    J_c's rows row0 .. row0 + dim of a contact from its frame's Jacobian J6 (N, 6, nv; the
    linear rows for dim 3); with ``drift``, gamma's from its classical acceleration at v' = 0
    (A6, N x 6), less w x v_p for dim 6 (the spatial acceleration; (v_p, w) = J6 v), all in
    the contact's axes (the CPU's ``_contact_terms``).
    """
    return ['def contact_rows(J6, A6, V, row0, dim, drift, JC, GC, BAD):',
            '    t = cuda.grid(1)',
            '    if t >= J6.shape[0]:',
            '        return',
            '    nv = J6.shape[2]',
            '    for r in range(dim):',
            '        for k in range(nv):',
            '            JC[t, row0 + r, k] = J6[t, r, k]',
            '    if drift:',
            '        s = cuda.local.array(6, real)',
            '        for r in range(6):',
            '            cs = 0.0',
            '            for k in range(nv):',
            '                cs += J6[t, r, k] * V[t, k]',
            '            s[r] = cs',
            '        for r in range(dim):',
            '            a = A6[t, r]',
            '            if dim == 6 and r < 3:',
            '                i, j = (r + 1) % 3, (r + 2) % 3',
            '                a -= s[3 + i] * s[j] - s[3 + j] * s[i]',
            '            GC[t, row0 + r] = a',
            '    BAD[t] = 0']


def _nan(arrays: list, indent: str = '        ') -> list:
    """Return lines writing NaN over a row of each (array, width)."""
    return [x for array, width in arrays
            for x in (f'{indent}for ci in range({width}):', f'{indent}    {array}[t, ci] = nan')]


def _solve_kernel(robot: _Robot, m: int) -> list:
    """
    Return ``contact_solve(M, H, TAU, first, J, G, rcond, DV, LAM, BAD)``: (v', lambda).

    The CPU's general path per row: M = L L^T (BAD 2 where not positive definite), x0 =
    M^-1 (S^T tau - h) (TAU's columns are the last of the nv: ``first`` = nv - its width;
    a non-finite one: BAD 1),
    Y = L^-1 J^T, A = Y^T Y, b = -gamma - J x0, lambda = lstsq(A, b, rcond); where
    |A lambda - b| > 1e-8 (1 + |b|) the contacts contradict each other (BAD 5); then
    v' = x0 + L^-T Y lambda. Above ``codegen.UNROLLED_SOLVE`` coordinates, as the CPU's
    ``tree_constrained_solve``: M = L^T L along the tree (:meth:`~.codegen._Robot.layout`,
    its order), y0 = L^-T (S^T tau - h) and Y = L^-T J^T descendants first (a contact's
    column of Y zero off its body's ancestors, skipped), b = -gamma - Y^T y0 and v' =
    L^-1 (y0 + Y lambda), ancestors first.
    """
    nv, tree = robot.nbv + robot.n, robot.layout()
    wide = max(m, 1)
    out = [('DV', nv), ('LAM', m)]
    if tree is None:
        factor = [*factored_mass_matrix(nv, _nan(out)),
                  f'    for k in range({nv}):',
                  '        rhs[k] = (TAU[t, k - first] if k >= first else 0.0) - H[t, k]',
                  *_looped_substitution(nv),
                  f'    for k in range({nv}):',
                  '        x0[k] = rhs[k]',
                  *solve_jacobian_columns(nv, tree, m, wide)]
        size, against = nv * (nv + 1) // 2, 'J x0'
        drift = ['            cs -= J[t, r, k] * x0[k]']
        finish = [f'    for ci in range({nv}):                 # L^-T (Y lambda)',
                  '        cs = 0.0',
                  f'        for r in range({m}):',
                  f'            cs += Y[ci * {wide} + r] * x[r]',
                  '        rhs[ci] = cs',
                  f'    for ci in range({nv - 1}, -1, -1):',
                  '        cs = rhs[ci]',
                  f'        for ck in range(ci + 1, {nv}):',
                  f'            cs -= chol[{_packed("ck", "ci")}] * rhs[ck]',
                  f'        rhs[ci] = cs / chol[{_packed("ci", "ci")}]',
                  f'    for k in range({nv}):',
                  '        DV[t, k] = x0[k] + rhs[k]']
    else:
        factor = [*tree.arrays,
                  *tree_factored_mass_matrix(nv, _nan(out)),
                  f'    for ci in range({nv}):                 # y0 = L^-T (S^T tau - h)',
                  '        rk = perm[ci]',
                  '        rhs[ci] = (TAU[t, rk - first] if rk >= first else 0.0) - H[t, rk]',
                  *tree_descend(nv, '    '),
                  *solve_jacobian_columns(nv, tree, m, wide)]
        size, against = tree.size, 'Y^T y0'
        drift = [f'            cs -= Y[k * {wide} + r] * rhs[k]']
        finish = [f'    for ci in range({nv}):                 # v\' = L^-1 (y0 + Y lambda)',
                  '        cs = rhs[ci]',
                  f'        for r in range({m}):',
                  f'            cs += Y[ci * {wide} + r] * x[r]',
                  '        rhs[ci] = cs',
                  *_tree_substitution(nv, '    ', False, ['DV[t, perm[ck]] = cx'])]
    return ['def contact_solve(M, H, TAU, first, J, G, rcond, DV, LAM, BAD):',
            '    t = cuda.grid(1)',
            '    if t >= M.shape[0]:',
            '        return',
            f'    chol = cuda.local.array({size}, real)',
            f'    rhs = cuda.local.array({nv}, real)',
            *([f'    x0 = cuda.local.array({nv}, real)'] if tree is None else []),
            f'    Y = cuda.local.array({nv * wide}, real)',
            f'    A = cuda.local.array({wide * wide}, real)',
            f'    B = cuda.local.array({wide * wide}, real)',
            f'    W = cuda.local.array({wide * wide}, real)',
            f'    bv = cuda.local.array({wide}, real)',
            f'    x = cuda.local.array({wide}, real)',
            f'    sv = cuda.local.array({wide}, real)',
            '    nonfinite = 0',
            '    for k in range(TAU.shape[1]):',
            '        nonfinite += 0 if isfinite(TAU[t, k]) else 1',
            '    if nonfinite > 0:',
            *_nan(out),
            '        BAD[t] = 1',
            '        return',
            *factor,
            f'    for r in range({m}):                  # A = Y^T Y, b = -gamma - {against}',
            '        for s in range(r + 1):',
            '            cs = 0.0',
            f'            for ci in range({nv}):',
            f'                cs += Y[ci * {wide} + r] * Y[ci * {wide} + s]',
            f'            A[r * {m} + s] = cs',
            f'            A[s * {m} + r] = cs',
            f'            B[r * {m} + s] = cs',
            f'            B[s * {m} + r] = cs',
            '        cs = -G[t, r]',
            f'        for k in range({nv}):',
            *drift,
            '        bv[r] = cs',
            *_min_norm(m, m),
            '    res = 0.0',
            '    size = 0.0',
            f'    for r in range({m}):',
            '        cs = -bv[r]',
            f'        for k in range({m}):',
            f'            cs += A[r * {m} + k] * x[k]',
            '        res += cs * cs',
            '        size += bv[r] * bv[r]',
            '    if not sqrt(res) <= 1e-8 * (1.0 + sqrt(size)):',
            *_nan(out),
            '        BAD[t] = 5',
            '        return',
            *finish,
            f'    for r in range({m}):',
            '        LAM[t, r] = x[r]',
            '    BAD[t] = 0']


def _inverse_kernel(nv: int, nb: int, m: int) -> list:
    """
    Return ``contact_inverse(TOTAL, J, G, DV, rcond, TAU, LAM, BAD)``: (tau, lambda).

    The CPU's ``contact_inverse_dynamics`` per row, TOTAL the inverse dynamics at v': where
    |J v' + gamma| > 1e-6 (1 + |J v'|), v' moves the contacts (BAD 6); lambda = lstsq(J_b^T,
    TOTAL_b, rcond) over the base's nb rows (none on a fixed base: lambda = 0); where the base
    wrench left |TOTAL_b - J_b^T lambda| > 1e-8 (1 + |TOTAL_b|), no contact force gives the
    base its acceleration (BAD 7); then tau = (TOTAL - J^T lambda) of the joints.
    """
    wide, rows = max(m, 1), max(nb, 1)
    out = [('TAU', nv - nb), ('LAM', m)]
    return ['def contact_inverse(TOTAL, J, G, DV, rcond, TAU, LAM, BAD):',
            '    t = cuda.grid(1)',
            '    if t >= TOTAL.shape[0]:',
            '        return',
            f'    B = cuda.local.array({rows * wide}, real)',
            f'    W = cuda.local.array({wide * wide}, real)',
            f'    bv = cuda.local.array({rows}, real)',
            f'    x = cuda.local.array({wide}, real)',
            f'    sv = cuda.local.array({wide}, real)',
            '    moved = 0.0',
            '    size = 0.0',
            f'    for r in range({m}):',
            '        cs = 0.0',
            f'        for k in range({nv}):',
            '            cs += J[t, r, k] * DV[t, k]',
            '        size += cs * cs',
            '        cs += G[t, r]',
            '        moved += cs * cs',
            '    if not sqrt(moved) <= 1e-6 * (1.0 + sqrt(size)):',
            *_nan(out),
            '        BAD[t] = 6',
            '        return',
            f'    for r in range({nb}):                 # B = J_b^T, b = TOTAL_b',
            f'        for k in range({m}):',
            f'            B[r * {wide} + k] = J[t, k, r]',
            '        bv[r] = TOTAL[t, r]',
            *_min_norm(nb, m),
            '    left = 0.0',
            '    size = 0.0',
            f'    for r in range({nb}):',
            '        cs = TOTAL[t, r]',
            '        size += cs * cs',
            f'        for k in range({m}):',
            '            cs -= J[t, k, r] * x[k]',
            '        left += cs * cs',
            '    if not sqrt(left) <= 1e-8 * (1.0 + sqrt(size)):',
            *_nan(out),
            '        BAD[t] = 7',
            '        return',
            f'    for j in range({nv - nb}):',
            f'        cs = TOTAL[t, {nb} + j]',
            f'        for k in range({m}):',
            f'            cs -= J[t, k, {nb} + j] * x[k]',
            '        TAU[t, j] = cs',
            f'    for r in range({m}):',
            '        LAM[t, r] = x[r]',
            '    BAD[t] = 0']


def contacts_source(model, m: int) -> str:
    """
    Return the numba-cuda source of a robot's contact kernels for m contact rows.

    ``contact_rows``, ``contact_solve`` and ``contact_inverse`` (signatures:
    ``gpu.CONTACT_SIGNATURES``); ``model`` a RobotModel on any base.
    """
    robot = _Robot(model)
    nv = robot.nbv + robot.n
    lines = ['# Generated by kron_dynamics.gpu.contacts for one robot and m contact rows: '
             'do not edit.',
             f'# robot {robot.name!r}, joints {robot.names}, m = {m}',
             'from math import isfinite, nan, sqrt',
             '',
             'from numba import cuda',
             'from numba import float64 as real']
    lines += tree_tables(robot.layout())   # M along the tree: the solve's tables
    for kernel in (_rows_kernel(), _solve_kernel(robot, m),
                   _inverse_kernel(nv, robot.nbv, m)):
        lines += ['', ''] + kernel
    return '\n'.join(lines) + '\n'
