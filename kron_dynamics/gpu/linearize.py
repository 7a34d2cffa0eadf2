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
The kernel that assembles linearize's (A, B) from the forward dynamics' derivatives.

The CPU's ``RobotModel.linearize`` per row, given (dv'/dq, dv'/dv, M^-1) of the generated
derivative kernels: the continuous x' = A x + B u (A = [[-ad_v, I], [da/dq, da/dv]], B =
[[0], [M^-1 S^T]]) or the discrete map of semi-implicit Euler (dt > 0), whose moving base's
rows carry the derivatives of integrate(q, w) at w = dt v+ in q, Ad(exp(-xi)), and in w, the
right Jacobian J_r(xi) = sum_k (-ad_xi)^k / (k + 1)! (the CPU's ``kernels.floating_base.
base_integrate_jacobians``: the same formulas, series and stop).
"""


def _skew_lines(name: str, a: list) -> list:
    """Return lines writing [a x] into the 3 x 3 local array ``name`` (row-major)."""
    zero, entries = '0.0', [[None, f'-{a[2]}', a[1]], [a[2], None, f'-{a[0]}'],
                            [f'-{a[1]}', a[0], None]]
    return [f'    {name}[{3 * i + j}] = {entries[i][j] or zero}'
            for i in range(3) for j in range(3)]


def _base_lines(six: list) -> list:
    """
    Return lines writing Jq = P^T Ad(exp(-xi)) P and Jw = P^T J_r(xi) P into ``JQ``, ``JW``.

    xi = P w, w (the base's tangent coordinates) in ``wb``; ``six``: each base coordinate's
    index in the twist (linear first).
    """
    nb = len(six)
    twist = [f'xi{k}' for k in range(6)]
    lines = [f'    xi{k} = ' + (f'wb[{six.index(k)}]' if k in six else '0.0') for k in range(6)]
    lines += ['    theta = sqrt(xi3 * xi3 + xi4 * xi4 + xi5 * xi5)',
              '    if theta < 1e-6:                    # the series of _exp6',
              '        ca = 1.0 - theta * theta / 6.0',
              '        cb = 0.5 - theta * theta / 24.0',
              '        cc = 1.0 / 6.0 - theta * theta / 120.0',
              '    else:',
              '        ca = sin(theta) / theta',
              '        sh = sin(0.5 * theta) / theta',
              '        cb = 2.0 * sh * sh',
              '        cc = (theta - sin(theta)) / (theta * theta * theta)']
    lines += _skew_lines('S', ['(-xi3)', '(-xi4)', '(-xi5)'])
    lines += ['    for i in range(3):                  # R = E, V = X: exp(-xi) = (R, V (-v))',
              '        for j in range(3):',
              '            s2 = 0.0',
              '            for k in range(3):',
              '                s2 += S[3 * i + k] * S[3 * k + j]',
              '            one = 1.0 if i == j else 0.0',
              '            E[3 * i + j] = one + ca * S[3 * i + j] + cb * s2',
              '            X[3 * i + j] = one + cb * S[3 * i + j] + cc * s2',
              '    p0 = X[0] * (-xi0) + X[1] * (-xi1) + X[2] * (-xi2)',
              '    p1 = X[3] * (-xi0) + X[4] * (-xi1) + X[5] * (-xi2)',
              '    p2 = X[6] * (-xi0) + X[7] * (-xi1) + X[8] * (-xi2)',
              *_skew_lines('S', ['p0', 'p1', 'p2']),
              '    for i in range(36):',
              '        AD[i] = 0.0',
              '    for i in range(3):                  # Ad = [[R, [p x] R], [0, R]]',
              '        for j in range(3):',
              '            AD[6 * i + j] = E[3 * i + j]',
              '            AD[6 * (i + 3) + j + 3] = E[3 * i + j]',
              '            s2 = 0.0',
              '            for k in range(3):',
              '                s2 += S[3 * i + k] * E[3 * k + j]',
              '            AD[6 * i + j + 3] = s2']
    # -ad_xi = -[[w x, v x], [0, w x]]
    lines += ['    for i in range(36):',
              '        AX[i] = 0.0']
    for r, c, a in ((0, 0, twist[3:]), (3, 3, twist[3:]), (0, 3, twist[:3])):
        x, y, z = a
        for i, j, e in ((0, 1, z), (0, 2, f'-{y}'), (1, 0, f'-{z}'), (1, 2, x), (2, 0, y),
                        (2, 1, f'-{x}')):
            lines.append(f'    AX[{6 * (r + i) + c + j}] = {e}')
    lines += ['    for i in range(36):                 # J_r: the terms fall factorially',
              '        TM[i] = 1.0 if i % 7 == 0 else 0.0',
              '        JR[i] = TM[i]',
              '    for k in range(1, 60):',
              '        big = 0.0',
              '        for i in range(6):',
              '            for j in range(6):',
              '                s2 = 0.0',
              '                for m2 in range(6):',
              '                    s2 += TM[6 * i + m2] * AX[6 * m2 + j]',
              '                NX[6 * i + j] = s2 / (k + 1.0)',
              '        for i in range(36):',
              '            TM[i] = NX[i]',
              '            JR[i] += NX[i]',
              '            big = abs(NX[i]) if abs(NX[i]) > big else big',
              '        if big < 1e-18:',
              '            break']
    lines += [f'    JQ[{nb * i + j}] = AD[{6 * si + sj}]' for i, si in enumerate(six)
              for j, sj in enumerate(six)]
    lines += [f'    JW[{nb * i + j}] = JR[{6 * si + sj}]' for i, si in enumerate(six)
              for j, sj in enumerate(six)]
    return lines


def linearize_kernel(nv: int, n: int, base: str) -> list:
    """
    Return ``linearize(DQ, DV, MINV, V, QDD, dt, discrete, A, B, BAD)`` (the module doc).

    DQ, DV, MINV: (N, nv, nv), the forward dynamics' derivatives at v' = QDD; A (N, 2 nv, 2
    nv), B (N, 2 nv, n); ``discrete`` 0: the continuous A, B (dt unused).
    """
    nb = nv - n
    six = {'fixed': [], 'planar': [0, 1, 5], 'floating': list(range(6))}[base]
    lines = ['def linearize(DQ, DV, MINV, V, QDD, dt, discrete, A, B, BAD):',
             '    t = cuda.grid(1)',
             '    if t >= DQ.shape[0]:',
             '        return',
             f'    for i in range({2 * nv}):',
             f'        for j in range({2 * nv}):',
             '            A[t, i, j] = 0.0',
             f'        for j in range({n}):',
             '            B[t, i, j] = 0.0',
             '    if discrete == 0:',
             f'        for i in range({nv}):',
             f'            A[t, i, {nv} + i] = 1.0',
             f'            for j in range({nv}):',
             f'                A[t, {nv} + i, j] = DQ[t, i, j]',
             f'                A[t, {nv} + i, {nv} + j] = DV[t, i, j]',
             f'            for j in range({n}):',
             f'                B[t, {nv} + i, j] = MINV[t, i, {nb} + j]']
    if nb:      # -P^T ad_(P v_b) P, entry by entry (-[a x] blocks)
        v = [f'V[t, {six.index(k)}]' if k in six else '0.0' for k in range(6)]
        full = [['0.0'] * 6 for _ in range(6)]
        for r, c, a in ((0, 0, v[3:]), (3, 3, v[3:]), (0, 3, v[:3])):
            x, y, z = a
            for i, j, e in ((0, 1, z), (0, 2, f'-{y}'), (1, 0, f'-{z}'), (1, 2, x),
                            (2, 0, y), (2, 1, f'-{x}')):
                full[r + i][c + j] = e
        lines += [f'        A[t, {i}, {j}] = {full[si][sj]}' for i, si in enumerate(six)
                  for j, sj in enumerate(six) if full[si][sj] != '0.0']
    lines += ['        BAD[t] = 0',
              '        return',
              f'    for i in range({nv}):',
              f'        for j in range({nv}):',
              '            dq, dv = dt * DQ[t, i, j], dt * DV[t, i, j] + (1.0 if i == j else 0.0)',
              '            A[t, i, j] = dt * dq',
              f'            A[t, {nv} + i, j] = dq',
              f'            A[t, {nv} + i, {nv} + j] = dv',
              f'            A[t, i, {nv} + j] = dt * dv',
              f'        for j in range({n}):',
              f'            B[t, i, j] = dt * dt * MINV[t, i, {nb} + j]',
              f'            B[t, {nv} + i, j] = dt * MINV[t, i, {nb} + j]']
    if nb:
        lines += ['    wb = cuda.local.array(6, real)',
                  '    S = cuda.local.array(9, real)',
                  '    E = cuda.local.array(9, real)',
                  '    X = cuda.local.array(9, real)',
                  '    AD = cuda.local.array(36, real)',
                  '    AX = cuda.local.array(36, real)',
                  '    TM = cuda.local.array(36, real)',
                  '    NX = cuda.local.array(36, real)',
                  '    JR = cuda.local.array(36, real)',
                  f'    JQ = cuda.local.array({nb * nb}, real)',
                  f'    JW = cuda.local.array({nb * nb}, real)',
                  '    col = cuda.local.array(6, real)',
                  f'    for k in range({nb}):                # w = dt v+, v+ = v + dt a',
                  '        wb[k] = dt * (V[t, k] + dt * QDD[t, k])',
                  *_base_lines(six),
                  f'    for c in range({2 * nv}):             # the base rows: Jw A_b (+ Jq)',
                  f'        for i in range({nb}):',
                  '            s2 = 0.0',
                  f'            for k in range({nb}):',
                  f'                s2 += JW[{nb} * i + k] * A[t, k, c]',
                  '            col[i] = s2',
                  f'        for i in range({nb}):',
                  f'            A[t, i, c] = col[i] + (JQ[{nb} * i + c] if c < {nb} else 0.0)',
                  f'    for c in range({n}):',
                  f'        for i in range({nb}):',
                  '            s2 = 0.0',
                  f'            for k in range({nb}):',
                  f'                s2 += JW[{nb} * i + k] * B[t, k, c]',
                  '            col[i] = s2',
                  f'        for i in range({nb}):',
                  '            B[t, i, c] = col[i]']
    lines += [f'    for i in range({nb}, {nv}):',
              '        A[t, i, i] += 1.0',
              '    BAD[t] = 0']
    return lines
